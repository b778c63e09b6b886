#pragma once

// Simulated clients of the PostgreSQL port (the real server::PgFrontend in front of each
// replica), speaking the wire protocol's simple query flow: a connection is a session; a client
// takes pg_try_advisory_lock(7), inserts numbered rows of its own into a shared table while it
// holds it, reads its rows back, and unlocks.
//
// What they check, on every answer:
//   exactly once   a row whose INSERT was acknowledged is read back exactly once; a row whose
//                  INSERT was refused with 57P03 ("nothing was applied") is never read; no row is
//                  read twice (08006 and a lost connection leave the outcome open, not the count)
//   reads          a SELECT of every client's rows sees every INSERT acknowledged before it was
//                  sent, whichever node served either (linearizable)
//   one holder     two clients may count themselves holders at once only when one of their
//                  sessions ended on the cluster meanwhile (which releases its locks, as
//                  PostgreSQL does when a connection dies; a grant answered late can also reach
//                  a client whose session is gone). So if both unlocks then answer "t", both
//                  sessions held the lock throughout the overlap: two holders
//   answered       a statement sent to a cluster with no fault active is answered within the
//                  request timeout

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/sim/replica/client_group.h"

namespace raftlock::sim::replica {

struct SqlClientParams {
    size_t clients = 3;
    uint64_t rows_per_hold_max = 3;
    bool trace = false;
};

struct SqlClientStats {
    uint64_t locks_taken = 0;
    uint64_t rows_acknowledged = 0;
    uint64_t reads_checked = 0;  // SELECTs whose rows were checked
    uint64_t sessions_lost = 0;  // connections that closed (or got FATAL) under a client
    uint64_t retries = 0;
    uint64_t overlaps = 0;  // grants while another client still counted itself the holder
};

// One backend message: its type byte and body.
struct PgBackendMessage {
    char type = 0;
    std::string body;
};

// Takes one complete backend message off the front of `buffer`; nullopt while it is incomplete.
std::optional<PgBackendMessage> take_pg_message(std::string& buffer);

struct SqlClient;  // sql_clients.cc

class SqlClients final : public ClientGroup<SqlClient> {
public:
    SqlClients(World& world, const SqlClientParams& params);
    ~SqlClients() override;

    const SqlClientStats& stats() const { return stats_; }

    // ClientObserver
    void on_pg(ConnId conn, const std::string& bytes) override;
    void on_closed(ConnId conn) override;

private:
    using Client = SqlClient;
    friend struct SqlClient;
    enum class Op : uint8_t { kNone, kStartup, kCreate, kLock, kInsert, kSelect, kUnlock };
    // What one statement's answer carried, up to ReadyForQuery.
    struct Answer {
        std::vector<std::string> rows;  // each DataRow, its columns joined with ':'
        std::string command_tag;        // CommandComplete
        std::string error_code;         // ErrorResponse's SQLSTATE, when there was one
        std::string error_severity;
    };

    void step(Client& c) override;
    void connect(Client& c);
    void query(Client& c, Op op, std::string sql);
    void on_message(Client& c, const PgBackendMessage& m);
    void on_answer(Client& c, Op op, const Answer& a);
    void lose_session(Client& c, std::string_view why);
    void check_rows(Client& c, const Answer& a);
    void begin_hold(Client& c);
    // The end of client c's current hold: released by an unlock answered "t", or not.
    void end_overlaps(Client& c, bool released);
    // A trace line, formatted only when tracing is on.
    template <typename... Args>
    void trace(const Client& c, fmt::format_string<Args...> format, Args&&... args) {
        if (params_.trace) {
            trace_line(c, fmt::format(format, std::forward<Args>(args)...));
        }
    }
    void trace_line(const Client& c, std::string_view what);

    SqlClientParams params_;
    // Holds that overlapped in the clients' view: (client, hold number) pairs, and which of the
    // two ended with an unlock answered "t".
    struct Overlap {
        size_t a = 0, b = 0;
        uint64_t a_hold = 0, b_hold = 0;
        uint64_t at_us = 0;
        bool a_released = false, b_released = false;
    };
    std::vector<Overlap> overlaps_;
    SqlClientStats stats_;
};

}  // namespace raftlock::sim::replica
