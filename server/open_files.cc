#include "server/open_files.h"

#include <algorithm>

#include <fmt/format.h>
#include <sys/resource.h>

namespace raftlock::server {

Result<ConnectionLimit, std::string> client_connection_limit(size_t connections_max) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
        return std::string("cannot read the open-file limit (RLIMIT_NOFILE)");
    }
    if (limit.rlim_cur < limit.rlim_max) {
        rlimit raised = limit;
        raised.rlim_cur = limit.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) {
            limit = raised;
        }
    }
    const size_t open_files = limit.rlim_cur == RLIM_INFINITY
                                  ? connections_max + kReservedFileDescriptors
                                  : static_cast<size_t>(limit.rlim_cur);
    if (open_files < kReservedFileDescriptors + kClientConnectionsMin) {
        return fmt::format(
            "the open-file limit is {}: the store, the peers and the admin port need {} and "
            "client connections at least {} more; raise it (ulimit -n)",
            open_files, kReservedFileDescriptors, kClientConnectionsMin);
    }
    ConnectionLimit out;
    out.open_files = open_files;
    out.client_connections_max = std::min(connections_max, open_files - kReservedFileDescriptors);
    out.lowered = out.client_connections_max < connections_max;
    return out;
}

}  // namespace raftlock::server
