#include "process_cluster.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/test_ports.h"

extern char** environ;

namespace raftlock::integration {

std::string raftlockd_path() {
    return RAFTLOCKD_PATH;
}
std::string raftlock_path() {
    return RAFTLOCK_PATH;
}

std::optional<std::string> http_get(uint16_t port,
                                    const std::string& path,
                                    std::string* status_line) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return std::nullopt;
    }
    const std::string request =
        "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    (void)!::write(fd, request.data(), request.size());
    std::string response;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) {
            break;
        }
        response.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    const size_t body = response.find("\r\n\r\n");
    if (body == std::string::npos) {
        return std::nullopt;
    }
    if (status_line) {
        *status_line = response.substr(0, response.find("\r\n"));
    }
    return response.substr(body + 4);
}

namespace {

std::vector<char*> c_args(const std::vector<std::string>& argv) {
    std::vector<char*> out;
    for (const std::string& a : argv) {
        out.push_back(const_cast<char*>(a.c_str()));
    }
    out.push_back(nullptr);
    return out;
}

std::vector<std::string> merged_env(const std::map<std::string, std::string>& extra) {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string kv = *e;
        const size_t eq = kv.find('=');
        env[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
    for (const auto& [k, v] : extra) {
        env[k] = v;
    }
    std::vector<std::string> out;
    for (const auto& [k, v] : env) {
        out.push_back(k + "=" + v);
    }
    return out;
}

int decode_status(int status) {
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return -1;
}

}  // namespace

pid_t spawn_program(const std::vector<std::string>& argv,
                    const std::string& stdout_path,
                    const std::map<std::string, std::string>& env) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, stdout_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<std::string> env_strings = merged_env(env);
    std::vector<char*> args = c_args(argv);
    std::vector<char*> envp = c_args(env_strings);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(rc == 0);
    return pid;
}

int wait_program(pid_t pid, int timeout_ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        int status = 0;
        const pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            return decode_status(status);
        }
        if (std::chrono::steady_clock::now() >= end) {
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

int run_program(const std::vector<std::string>& argv,
                std::string* out,
                const std::map<std::string, std::string>& env) {
    char path[] = "/tmp/raftlock-run-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    ::close(fd);
    const pid_t pid = spawn_program(argv, path, env);
    const int status = wait_program(pid, 60000);
    if (out) {
        std::ifstream in(path);
        std::stringstream ss;
        ss << in.rdbuf();
        *out = ss.str();
    }
    std::filesystem::remove(path);
    return status;
}

ProcessCluster::ProcessCluster(size_t size,
                               std::vector<std::string> extra_flags,
                               std::vector<std::string> launcher)
    : extra_flags_(std::move(extra_flags)), launcher_(std::move(launcher)) {
    std::string tmpl = "/tmp/raftlock-it-XXXXXX";
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    root_ = tmpl;
    for (uint64_t id = 1; id <= size; ++id) {
        Node& n = nodes_[id];
        n.ports = NodePorts{test_ports::unused_port(), test_ports::unused_port(),
                            test_ports::unused_port(), test_ports::unused_port(),
                            test_ports::unused_port()};
        n.data_dir = root_ + "/node" + std::to_string(id);
    }
    for (uint64_t id = 1; id <= size; ++id) {
        start(id);
    }
}

ProcessCluster::~ProcessCluster() {
    for (auto& [id, n] : nodes_) {
        if (n.pid > 0) {
            ::kill(n.pid, SIGCONT);
            ::kill(n.pid, SIGKILL);
            wait_program(n.pid, 5000);
        }
    }
    if (!std::getenv("RAFTLOCK_KEEP_DATA")) {
        std::filesystem::remove_all(root_);
    }
}

std::vector<std::string> ProcessCluster::argv_for(uint64_t id) const {
    const Node& n = nodes_.at(id);
    std::vector<std::string> argv = {
        raftlockd_path(),
        "--id",
        std::to_string(id),
        "--cluster-id",
        "42",
        "--data-dir",
        n.data_dir,
        "--client-listen",
        "127.0.0.1:" + std::to_string(n.ports.client),
        "--admin-listen",
        "127.0.0.1:" + std::to_string(n.ports.admin),
        "--session-timeout-min-ms",
        "500",
    };
    for (const auto& [mid, m] : nodes_) {
        argv.push_back("--member");
        argv.push_back(std::to_string(mid) + "=127.0.0.1:" + std::to_string(m.ports.raft));
    }
    if (n.joined) {
        argv.push_back("--initial-cluster-state");
        argv.push_back("existing");
    }
    for (std::string flag : extra_flags_) {
        for (const auto& [name, port] : {std::pair{std::string("{redis}"), n.ports.redis},
                                         std::pair{std::string("{pg}"), n.ports.pg}}) {
            if (const size_t at = flag.find(name); at != std::string::npos) {
                flag.replace(at, name.size(), "127.0.0.1:" + std::to_string(port));
            }
        }
        argv.push_back(std::move(flag));
    }
    return argv;
}

uint64_t ProcessCluster::add_node() {
    const uint64_t id = nodes_.rbegin()->first + 1;
    Node& n = nodes_[id];
    n.ports =
        NodePorts{test_ports::unused_port(), test_ports::unused_port(), test_ports::unused_port(),
                  test_ports::unused_port(), test_ports::unused_port()};
    n.data_dir = root_ + "/node" + std::to_string(id);
    n.joined = true;
    start(id);
    return id;
}

int ProcessCluster::wait_exit(uint64_t id, int timeout_ms) {
    Node& n = nodes_.at(id);
    REQUIRE(n.pid > 0);
    const int status = wait_program(n.pid, timeout_ms);
    if (status >= 0) {
        n.pid = -1;
    }
    return status;
}

void ProcessCluster::start(uint64_t id) {
    Node& n = nodes_.at(id);
    REQUIRE(n.pid <= 0);
    std::filesystem::create_directories(n.data_dir);
    std::vector<std::string> argv = launcher_;
    const std::vector<std::string> node = argv_for(id);
    argv.insert(argv.end(), node.begin(), node.end());
    n.pid = spawn_program(argv, root_ + "/node" + std::to_string(id) + ".log");
}

void ProcessCluster::kill(uint64_t id) {
    Node& n = nodes_.at(id);
    REQUIRE(n.pid > 0);
    ::kill(n.pid, SIGKILL);
    wait_program(n.pid, 5000);
    n.pid = -1;
}

void ProcessCluster::stop(uint64_t id) {
    Node& n = nodes_.at(id);
    REQUIRE(n.pid > 0);
    ::kill(n.pid, SIGTERM);
    const int status = wait_program(n.pid, 10000);
    n.pid = -1;
    CHECK(status == 0);
}

void ProcessCluster::pause(uint64_t id) {
    ::kill(nodes_.at(id).pid, SIGSTOP);
}

void ProcessCluster::resume(uint64_t id) {
    ::kill(nodes_.at(id).pid, SIGCONT);
}

bool ProcessCluster::running(uint64_t id) const {
    return nodes_.at(id).pid > 0;
}

std::optional<std::string> ProcessCluster::status_field(uint64_t id, const std::string& field) {
    std::optional<std::string> body = http_get(nodes_.at(id).ports.admin, "/status");
    if (!body) {
        return std::nullopt;
    }
    const nlohmann::json j = nlohmann::json::parse(*body, nullptr, false);
    if (j.is_discarded() || !j.contains(field)) {
        return std::nullopt;
    }
    return j[field].is_string() ? j[field].get<std::string>() : j[field].dump();
}

uint64_t ProcessCluster::wait_for_leader(int timeout_ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < end) {
        uint64_t agreed = 0;
        bool all = true;
        for (const auto& [id, n] : nodes_) {
            if (n.pid <= 0) {
                continue;
            }
            std::optional<std::string> leader = status_field(id, "leader");
            if (!leader || *leader == "0" || (agreed != 0 && std::stoull(*leader) != agreed)) {
                all = false;
                break;
            }
            agreed = std::stoull(*leader);
        }
        if (all && agreed != 0 && running(agreed) && status_field(agreed, "role") == "leader") {
            return agreed;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    warn_no_leader();
    return 0;
}

void ProcessCluster::warn_no_leader() const {
    for (const auto& [id, n] : nodes_) {
        if (n.pid <= 0) {
            continue;
        }
        // Peeks (WNOWAIT) so that the node is still reaped where the test expects it.
        siginfo_t info{};
        const bool exited =
            ::waitid(P_PID, static_cast<id_t>(n.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == n.pid;
        std::vector<std::string> lines;
        std::istringstream log(log_of(id));
        for (std::string line; std::getline(log, line);) {
            lines.push_back(std::move(line));
        }
        std::string tail;
        for (size_t i = lines.size() > 8 ? lines.size() - 8 : 0; i < lines.size(); ++i) {
            tail += lines[i] + "\n";
        }
        WARN("no leader: node " << id << (exited ? " has exited" : " runs")
                                << "; the end of its log:\n"
                                << tail);
    }
}

std::string ProcessCluster::client_endpoint(uint64_t id) const {
    return "127.0.0.1:" + std::to_string(nodes_.at(id).ports.client);
}

std::string ProcessCluster::endpoints() const {
    std::string out;
    for (const auto& [id, n] : nodes_) {
        out += (out.empty() ? "" : ",") + client_endpoint(id);
    }
    return out;
}

std::vector<uint64_t> ProcessCluster::ids() const {
    std::vector<uint64_t> out;
    for (const auto& [id, n] : nodes_) {
        out.push_back(id);
    }
    return out;
}

std::string ProcessCluster::log_of(uint64_t id) const {
    std::ifstream in(root_ + "/node" + std::to_string(id) + ".log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace raftlock::integration
