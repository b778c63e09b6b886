#include "storage/rocks_logger.h"

#include <cstdarg>
#include <cstdio>
#include <string_view>

#include <spdlog/spdlog.h>

namespace raftlock::storage {
namespace {

constexpr size_t kMessageBytesMax = 1024;

spdlog::level::level_enum to_spdlog(rocksdb::InfoLogLevel level) {
    switch (level) {
        case rocksdb::InfoLogLevel::DEBUG_LEVEL:
            return spdlog::level::debug;
        case rocksdb::InfoLogLevel::INFO_LEVEL:
        case rocksdb::InfoLogLevel::HEADER_LEVEL:
            return spdlog::level::info;
        case rocksdb::InfoLogLevel::WARN_LEVEL:
            return spdlog::level::warn;
        case rocksdb::InfoLogLevel::ERROR_LEVEL:
            return spdlog::level::err;
        case rocksdb::InfoLogLevel::FATAL_LEVEL:
        case rocksdb::InfoLogLevel::NUM_INFO_LOG_LEVELS:
            return spdlog::level::critical;
    }
    return spdlog::level::err;
}

class SpdlogRocksLogger final : public rocksdb::Logger {
public:
    explicit SpdlogRocksLogger(rocksdb::InfoLogLevel level) : rocksdb::Logger(level) {}

    // RocksDB calls this overload for messages without a level (its default level is INFO).
    void Logv(const char* format, va_list ap) override {
        Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
    }

    void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
        if (level < GetInfoLogLevel()) {
            return;
        }
        char message[kMessageBytesMax];
        const int n = std::vsnprintf(message, sizeof(message), format, ap);
        if (n < 0) {
            spdlog::log(to_spdlog(level), "rocksdb: (a message that could not be formatted)");
            return;
        }
        const bool cut = static_cast<size_t>(n) >= sizeof(message);
        spdlog::log(to_spdlog(level), "rocksdb: {}{}", std::string_view(message),
                    cut ? " [cut]" : "");
    }
};

}  // namespace

std::shared_ptr<rocksdb::Logger> make_rocks_logger(rocksdb::InfoLogLevel level) {
    return std::make_shared<SpdlogRocksLogger>(level);
}

}  // namespace raftlock::storage
