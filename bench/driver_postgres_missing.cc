// Compiled instead of driver_postgres.cc when CMake found no libpq (libpq-dev): the benchmark
// then says the postgres system is not available in this build.

#include "bench/driver.h"

namespace raftlock::bench {

std::unique_ptr<Driver> make_postgres_driver(const std::string& /*endpoints*/) {
    return nullptr;
}

}  // namespace raftlock::bench
