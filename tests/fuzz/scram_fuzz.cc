// libFuzzer: the login handshakes' parsers, on bytes from the network (issue 18: "the fuzzers
// cover the handshake parsers"). The first input byte picks the side: a server taking a
// client-first-message (native port: the Authenticate request; PostgreSQL: inside a
// SASLInitialResponse, parsed first) and then, after the byte 0x00 in the input, a
// client-final-message; or a client taking a server-first and then a server-final message.
//
// Invariants: no parser reads out of bounds (ASan); an error always has a message; a server
// accepts exactly one pair of messages, the real exchange's (any other change to either breaks
// the proof, which a fuzz run cannot compute); likewise a client accepts only the real server's
// pair. The seeds (fuzz_seeds) are that real exchange, with the same fixed nonces.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/assert.h"
#include "base/scram.h"
#include "net/pg_codec.h"

namespace scram = raftlock::base::scram;

namespace {

// The input's two messages, split at the first NUL (which no SCRAM message may hold).
std::pair<std::string_view, std::string_view> two_messages(std::string_view input) {
    const size_t nul = input.find('\0');
    if (nul == std::string_view::npos) {
        return {input, {}};
    }
    return {input.substr(0, nul), input.substr(nul + 1)};
}

const scram::Verifier& verifier() {
    static const scram::Verifier v =
        scram::make_verifier("pencil", "fuzz-salt-bytes", scram::kIterationsMin);
    return v;
}

constexpr std::string_view kClientNonce = "rOprNGfwEbeRWgbNEkqO";
constexpr std::string_view kServerNonce = "server-nonce";

// The real exchange of user "user" with password "pencil" (what fuzz_seeds writes).
struct Exchange {
    std::string client_first, server_first, client_final, server_final;
};
const Exchange& real_exchange() {
    static const Exchange e = [] {
        Exchange out;
        scram::ClientExchange client("user", "pencil", std::string(kClientNonce));
        out.client_first = client.client_first();
        scram::ServerExchange server(scram::parse_client_first(out.client_first).value(),
                                     verifier(), std::string(kServerNonce));
        out.server_first = server.server_first();
        out.client_final = client.server_first(out.server_first).value();
        out.server_final = server.client_final(out.client_final).value();
        return out;
    }();
    return e;
}

void server_side(std::string_view input, bool as_postgres) {
    // The PostgreSQL side's data outlives the views into it.
    std::string data(input);
    if (as_postgres) {
        auto initial = raftlock::net::parse_sasl_initial_response(input);
        if (!initial.ok()) {
            RL_ASSERT(!initial.error().empty());
            return;
        }
        data = std::move(initial->data);
    }
    const auto [first_view, rest] = two_messages(data);
    const std::string first_message(first_view);
    auto parsed = scram::parse_client_first(first_message);
    if (!parsed.ok()) {
        RL_ASSERT(!parsed.error().message.empty());
        return;
    }
    scram::ServerExchange server(std::move(parsed).value(), verifier(), std::string(kServerNonce));
    RL_ASSERT(!server.server_first().empty());
    auto last = server.client_final(rest);
    const bool real =
        first_message == real_exchange().client_first && rest == real_exchange().client_final;
    RL_ASSERT(last.ok() == real);
    RL_ASSERT(server.succeeded() == real);
    RL_ASSERT(last.ok() || !last.error().message.empty());
}

void client_side(std::string_view input) {
    auto [first, final_message] = two_messages(input);
    scram::ClientExchange client("user", "pencil", std::string(kClientNonce));
    (void)client.client_first();
    auto answer = client.server_first(first);
    if (!answer.ok()) {
        RL_ASSERT(!answer.error().message.empty());
        return;
    }
    auto verified = client.server_final(final_message);
    // The server signature needs ServerKey, which only a server that has the verifier knows.
    const bool real =
        first == real_exchange().server_first && final_message == real_exchange().server_final;
    RL_ASSERT(verified.ok() == real);
    RL_ASSERT(verified.ok() || !verified.error().message.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 3) {
        case 0:
            server_side(input, false);
            break;
        case 1:
            server_side(input, true);
            break;
        default:
            client_side(input);
            break;
    }
    return 0;
}
