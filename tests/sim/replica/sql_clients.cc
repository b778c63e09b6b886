#include "tests/sim/replica/sql_clients.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::sim::replica {

namespace {

constexpr const char* kCreateTable = "CREATE TABLE IF NOT EXISTS sim_rows (client int, n int)";
constexpr const char* kTryLockQuery = "SELECT pg_try_advisory_lock(7)";
constexpr const char* kUnlockQuery = "SELECT pg_advisory_unlock(7)";

uint32_t read_be32(const std::string& s, size_t at) {
    return (uint32_t{static_cast<uint8_t>(s[at])} << 24) |
           (uint32_t{static_cast<uint8_t>(s[at + 1])} << 16) |
           (uint32_t{static_cast<uint8_t>(s[at + 2])} << 8) |
           uint32_t{static_cast<uint8_t>(s[at + 3])};
}

}  // namespace

std::optional<PgBackendMessage> take_pg_message(std::string& buffer) {
    if (buffer.size() < 5) {
        return std::nullopt;
    }
    const uint32_t length = read_be32(buffer, 1);  // counts itself, not the type byte
    RL_ASSERT_MSG(length >= 4, "a backend message with a length below 4");
    if (buffer.size() < 1 + size_t{length}) {
        return std::nullopt;
    }
    PgBackendMessage m{buffer[0], buffer.substr(5, length - 4)};
    buffer.erase(0, 1 + size_t{length});
    return m;
}

// What a client knows of one of its rows.
enum class RowState : uint8_t {
    kSent,        // the INSERT is out
    kAcked,       // INSERT 0 1: applied, exactly once
    kNotApplied,  // 57P03: nothing was applied, ever
    kUnknown,     // 08006 or the connection was lost: applied at most once
};

struct SqlClient {
    size_t index = 0;
    std::optional<ConnId> conn;
    bool session_open = false;  // ReadyForQuery after the startup
    std::string buffer;         // backend bytes not parsed yet

    SqlClients::Op op = SqlClients::Op::kNone;
    std::string sql;
    uint64_t op_sent_us = 0;
    uint64_t op_answer_by_us = 0;
    bool blame = false;
    SqlClients::Answer answer;

    bool table_created = false;
    bool holding = false;
    uint64_t hold_acquired_us = 0;
    uint64_t hold_number = 0;      // of this client's holds, the current (or last) one
    uint64_t statements_left = 0;  // in this hold: INSERT, SELECT, INSERT, ...

    uint64_t next_row = 1;
    uint64_t inserting = 0;  // the row of the INSERT in flight
    std::map<uint64_t, RowState> rows;
    std::map<uint64_t, uint64_t> acked_at_us;
};

SqlClients::SqlClients(World& world, const SqlClientParams& params)
    : ClientGroup(world, params.clients), params_(params) {}

SqlClients::~SqlClients() = default;

void SqlClients::trace_line(const Client& c, std::string_view what) {
    fmt::print("t={:.6f}s s{} (conn {}{}): {}\n", world_.now_us() / 1e6, c.index,
               c.conn.value_or(0) & ~net::kPgConnectionBit,
               c.conn ? fmt::format(" to n{}", world_.node_of(*c.conn)) : "", what);
}

void SqlClients::connect(Client& c) {
    if (!connect_to_any(c, &World::open_pg)) {
        wake(c, kBackoffUs);
        return;
    }
    c.buffer.clear();
    c.session_open = false;
    c.op = Op::kStartup;
    c.answer = Answer{};
    c.op_sent_us = world_.now_us();
    c.op_answer_by_us =
        c.op_sent_us + uint64_t{world_.params().config.request_timeout_ms} * 1000 + kAnswerSlackUs;
    c.blame = true;
    trace(c, "connects");
    world_.send_pg(*c.conn, net::PgStartup{{{"user", "sim"}, {"database", "sim"}}});
    wake(c, c.op_answer_by_us - c.op_sent_us);
}

void SqlClients::query(Client& c, Op op, std::string sql) {
    RL_ASSERT(c.conn && c.session_open && c.op == Op::kNone);
    c.op = op;
    c.sql = std::move(sql);
    c.answer = Answer{};
    c.op_sent_us = world_.now_us();
    const uint64_t answer_us =
        uint64_t{world_.params().config.request_timeout_ms} * 1000 + kAnswerSlackUs;
    c.op_answer_by_us = c.op_sent_us + answer_us;
    c.blame = true;
    trace(c, "sends {}", c.sql);
    world_.send_pg(*c.conn, net::PgQuery{c.sql});
    wake(c, answer_us);
}

void SqlClients::step(Client& c) {
    if (c.op != Op::kNone) {
        if (!overdue(c, c.op_sent_us, c.op_answer_by_us, c.blame, [&] {
                return fmt::format("sql client s{}: {}", c.index,
                                   c.op == Op::kStartup ? "startup" : c.sql);
            })) {
            return;
        }
        ++stats_.retries;
        lose_session(c, "no answer in time");
        wake(c, kBackoffUs);
        return;
    }
    if (!c.conn) {
        if (!stopping_) {
            connect(c);
        }
        return;
    }
    if (!c.table_created) {
        query(c, Op::kCreate, kCreateTable);
        return;
    }
    if (!c.holding) {
        if (!stopping_) {
            query(c, Op::kLock, kTryLockQuery);
        }
        return;
    }
    if (c.statements_left == 0 || stopping_) {
        c.holding = false;  // stops counting the lock as its own when it sends the unlock
        query(c, Op::kUnlock, kUnlockQuery);
        return;
    }
    --c.statements_left;
    if (c.statements_left % 2 == 1) {
        c.inserting = c.next_row++;
        c.rows[c.inserting] = RowState::kSent;
        query(c, Op::kInsert,
              fmt::format("INSERT INTO sim_rows VALUES ({}, {})", c.index, c.inserting));
    } else {
        query(c, Op::kSelect, "SELECT client, n FROM sim_rows");
    }
}

void SqlClients::lose_session(Client& c, std::string_view why) {
    if (c.conn) {
        trace(c, "drops the connection: {}", why);
        by_conn_.erase(*c.conn);
        world_.close(*c.conn);
        c.conn.reset();
    }
    if (c.session_open) {
        ++stats_.sessions_lost;
    }
    if (c.holding || c.op == Op::kUnlock) {
        end_overlaps(c, false);  // its session ended, or may have: that explains an overlap
    }
    c.session_open = false;
    c.holding = false;  // the session is gone, or going: its locks with it
    if (c.op == Op::kInsert) {
        c.rows[c.inserting] = RowState::kUnknown;
    }
    c.op = Op::kNone;
}

void SqlClients::on_pg(ConnId conn, const std::string& bytes) {
    auto it = by_conn_.find(conn);
    if (it == by_conn_.end()) {
        return;
    }
    Client& c = *it->second;
    c.buffer += bytes;
    while (c.conn && *c.conn == conn) {
        std::optional<PgBackendMessage> m = take_pg_message(c.buffer);
        if (!m) {
            break;
        }
        on_message(c, *m);
    }
}

void SqlClients::on_closed(ConnId conn) {
    if (Client* c = take_closed(conn)) {
        lose_session(*c, "closed by the server");
        wake(*c, kBackoffUs);
    }
}

void SqlClients::on_message(Client& c, const PgBackendMessage& m) {
    switch (m.type) {
        case 'E': {
            // Fields: a code byte and a string each, up to a zero byte.
            for (size_t at = 0; at < m.body.size() && m.body[at] != '\0';) {
                const char field = m.body[at];
                const size_t end = m.body.find('\0', at + 1);
                RL_ASSERT(end != std::string::npos);
                const std::string value = m.body.substr(at + 1, end - at - 1);
                if (field == 'C') {
                    c.answer.error_code = value;
                } else if (field == 'S') {
                    c.answer.error_severity = value;
                }
                at = end + 1;
            }
            trace(c, "hears {} {}", c.answer.error_severity, c.answer.error_code);
            if (c.answer.error_severity == "FATAL") {
                lose_session(c, fmt::format("FATAL {}", c.answer.error_code));
                wake(c, kBackoffUs);
            }
            return;
        }
        case 'D': {
            // Column count (16 bits), then each column's length (32 bits, -1 for NULL) and bytes;
            // the columns of a row are joined with ':'.
            std::string row;
            for (size_t at = 2; at + 4 <= m.body.size();) {
                const uint32_t length = read_be32(m.body, at);
                row += row.empty() ? "" : ":";
                if (length == 0xffffffff) {
                    row += "NULL";
                    at += 4;
                } else {
                    row += m.body.substr(at + 4, length);
                    at += 4 + length;
                }
            }
            c.answer.rows.push_back(std::move(row));
            return;
        }
        case 'C':
            c.answer.command_tag = m.body.substr(0, m.body.find('\0'));
            return;
        case 'R':
            if (read_be32(m.body, 0) != 0) {
                verdicts_.fail_liveness(
                    fmt::format("sql client s{}: asked for a password by a trust server", c.index));
            }
            return;
        case 'Z': {
            const Op op = c.op;
            c.op = Op::kNone;
            if (op == Op::kStartup) {
                c.session_open = true;
                trace(c, "session open");
                wake(c, 0);
                return;
            }
            if (op == Op::kNone) {
                verdicts_.fail_liveness(
                    fmt::format("sql client s{}: an answer to nothing", c.index));
                return;
            }
            on_answer(c, op, c.answer);
            return;
        }
        default:
            return;  // ParameterStatus, BackendKeyData, RowDescription, notices
    }
}

void SqlClients::on_answer(Client& c, Op op, const Answer& a) {
    const uint64_t now = world_.now_us();
    trace(c, "answered {}{}{}", a.command_tag, a.error_code,
          a.rows.empty() ? "" : fmt::format(" [{}]", fmt::join(a.rows, ",")));
    if (!a.error_code.empty()) {
        if (op == Op::kInsert) {
            c.rows[c.inserting] =
                a.error_code == "57P03" ? RowState::kNotApplied : RowState::kUnknown;
        }
        if (a.error_code == "57P03") {
            // Nothing was applied: the same step again later (a new row for an INSERT).
            ++stats_.retries;
            if (op == Op::kInsert || op == Op::kSelect) {
                ++c.statements_left;
            }
            if (op == Op::kUnlock) {
                c.holding = false;
                lose_session(c, "the unlock was refused; ending the session releases the lock");
            }
            wake(c, kBackoffUs);
            return;
        }
        if (a.error_code != "08006") {
            verdicts_.fail_liveness(
                fmt::format("sql client s{}: {} answered {}", c.index, c.sql, a.error_code));
        }
        // The outcome is open (a lock, an unlock): ending the session settles it.
        ++stats_.retries;
        lose_session(c, fmt::format("{} answered {}", c.sql, a.error_code));
        wake(c, kBackoffUs);
        return;
    }
    switch (op) {
        case Op::kCreate:
            c.table_created = true;
            break;
        case Op::kLock:
            if (a.rows.size() == 1 && a.rows[0] == "t") {
                begin_hold(c);
            } else {
                wake(c, kBackoffUs + world_.rng().uniform(kBackoffUs));
                return;
            }
            break;
        case Op::kInsert:
            if (a.command_tag != "INSERT 0 1") {
                verdicts_.fail_liveness(
                    fmt::format("sql client s{}: {} answered {}", c.index, c.sql, a.command_tag));
            }
            c.rows[c.inserting] = RowState::kAcked;
            c.acked_at_us[c.inserting] = now;
            ++stats_.rows_acknowledged;
            break;
        case Op::kSelect:
            check_rows(c, a);
            break;
        case Op::kUnlock:
            end_overlaps(c, a.rows.size() == 1 && a.rows[0] == "t");
            if (a.rows.size() != 1 || a.rows[0] != "t") {
                verdicts_.fail(fmt::format(
                    "sql client s{}: its session was open and held the lock since t={:.3f}s, "
                    "but the unlock answered {}",
                    c.index, c.hold_acquired_us / 1e6, fmt::join(a.rows, ",")));
            }
            wake(c, kBackoffUs + world_.rng().uniform(kBackoffUs));
            return;
        case Op::kNone:
        case Op::kStartup:
            RL_ASSERT(false);
    }
    wake(c, 0);
}

// Every client's rows, read by `reader`: each acknowledged before the SELECT was sent is there,
// none is there twice, none was refused with 57P03.
void SqlClients::check_rows(Client& reader, const Answer& a) {
    ++stats_.reads_checked;
    std::set<std::pair<uint64_t, uint64_t>> seen;  // (client, row)
    for (const std::string& text : a.rows) {
        char* rest = nullptr;
        const uint64_t index = std::strtoull(text.c_str(), &rest, 10);
        const uint64_t n = *rest == ':' ? std::strtoull(rest + 1, nullptr, 10) : 0;
        if (index >= clients_.size() || n == 0) {
            verdicts_.fail(
                fmt::format("sql client s{}: read a row no client wrote: {}", reader.index, text));
            continue;
        }
        const Client& writer = *clients_[index];
        auto row = writer.rows.find(n);
        if (!seen.insert({index, n}).second) {
            verdicts_.fail(
                fmt::format("sql client s{}: row {} of s{} read twice", reader.index, n, index));
        } else if (row == writer.rows.end()) {
            verdicts_.fail(fmt::format("sql client s{}: row {} of s{} read, never inserted",
                                       reader.index, n, index));
        } else if (row->second == RowState::kNotApplied) {
            verdicts_.fail(fmt::format(
                "sql client s{}: row {} of s{} read, though its INSERT was answered 57P03 "
                "(nothing was applied)",
                reader.index, n, index));
        }
    }
    for (size_t index = 0; index < clients_.size(); ++index) {
        for (const auto& [n, at_us] : clients_[index]->acked_at_us) {
            if (at_us < reader.op_sent_us && seen.count({index, n}) == 0) {
                verdicts_.fail(fmt::format(
                    "sql client s{}: row {} of s{}, acknowledged at t={:.3f}s, missing from a "
                    "SELECT sent at t={:.3f}s",
                    reader.index, n, index, at_us / 1e6, reader.op_sent_us / 1e6));
            }
        }
    }
}

void SqlClients::begin_hold(Client& c) {
    const uint64_t now = world_.now_us();
    ++c.hold_number;
    for (auto& other : clients_) {
        // Both count themselves holders: one of the sessions must have ended on the cluster,
        // which its client learns later (57P01); the unlocks will tell (end_overlaps).
        if (other.get() != &c && other->holding) {
            overlaps_.push_back(
                Overlap{other->index, c.index, other->hold_number, c.hold_number, now});
            ++stats_.overlaps;
        }
    }
    ++stats_.locks_taken;
    c.holding = true;
    c.hold_acquired_us = world_.now_us();
    c.statements_left = 2 * (1 + world_.rng().uniform(params_.rows_per_hold_max));
}

void SqlClients::end_overlaps(Client& c, bool released) {
    for (auto it = overlaps_.begin(); it != overlaps_.end();) {
        Overlap& o = *it;
        const bool is_a = o.a == c.index && o.a_hold == c.hold_number;
        const bool is_b = o.b == c.index && o.b_hold == c.hold_number;
        if (!is_a && !is_b) {
            ++it;
            continue;
        }
        if (!released) {
            it = overlaps_.erase(it);  // explained: this session ended (or may have)
            continue;
        }
        (is_a ? o.a_released : o.b_released) = true;
        if (!o.a_released || !o.b_released) {
            ++it;
            continue;
        }
        verdicts_.fail(fmt::format(
            "two SQL holders: s{} and s{} both held advisory lock 7 at t={:.3f}s, and both "
            "unlocks answered t: neither session ended in between",
            o.a, o.b, o.at_us / 1e6));
        it = overlaps_.erase(it);
    }
}

}  // namespace raftlock::sim::replica
