// Compiled instead of driver_zookeeper.cc when CMake found no ZooKeeper C client
// (libzookeeper-mt-dev): the benchmark then says ZooKeeper is not available in this build.

#include "bench/driver.h"

namespace raftlock::bench {

std::unique_ptr<Driver> make_zookeeper_driver(const std::string& /*endpoints*/) {
    return nullptr;
}

}  // namespace raftlock::bench
