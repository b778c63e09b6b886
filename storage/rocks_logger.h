#pragma once

// RocksDB's messages go to the server's own log (spdlog, prefixed "rocksdb:"), not to a LOG file
// in the database directory. Two reasons. An operator reads one log, not two. And a LOG file sits
// on the data disk: when that disk is full, RocksDB's file logger keeps appending after its first
// failed write, which trips an assertion inside the Debian build of RocksDB (its assertions are
// on) from a background thread, racing the storage's own "fatal disk error" and hiding the cause.

#include <memory>

#include <rocksdb/env.h>

namespace raftlock::storage {

// A logger for DBOptions::info_log. Messages below `level` are dropped; each message is cut at a
// fixed length, so a long one cannot grow the log line without bound.
std::shared_ptr<rocksdb::Logger> make_rocks_logger(rocksdb::InfoLogLevel level);

}  // namespace raftlock::storage
