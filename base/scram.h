#pragma once

// SCRAM-SHA-256 (RFC 5802 with RFC 7677's hash), without channel binding: the verifiers a server
// stores instead of passwords, and both sides of one exchange as small state machines over the
// four text messages (client-first, server-first, client-final, server-final).
//
// What is left out, on purpose:
//   - Channel binding (SCRAM-SHA-256-PLUS). A client that asks for it ("p=...") is refused; one
//     that says it could but believes the server cannot ("y") is accepted, which is right exactly
//     because this server never advertises -PLUS.
//   - Authorization identities ("a=..."): a client authenticates as itself and nobody else.
//   - SASLprep. Passwords and user names are used as the bytes they are. For printable ASCII this
//     is what SASLprep gives anyway; a non-ASCII password must be typed the same way each time.
//
// The messages come from the network, so every parser here is strict and bounded: at most
// kMessageBytesMax bytes, attributes in the RFC's order, optional extensions syntax-checked and
// then ignored (RFC 5802 section 7), and every index checked before it is read.
//
// All functions are pure except random_bytes() and random_nonce(): only the edges (a listener,
// the CLI) call those, and hand what they got to the exchanges, so tests can fix every input.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "base/digest.h"
#include "base/result.h"

namespace raftlock::base::scram {

inline constexpr uint32_t kIterationsMin = 4096;    // RFC 7677's minimum
inline constexpr uint32_t kIterationsMax = 100000;  // bounds a server's CPU per attempt
inline constexpr size_t kSaltBytesMin = 8;
inline constexpr size_t kSaltBytesMax = 64;
// The salt length of new verifiers and of decoys (PostgreSQL uses the same), so that a decoy's
// salt looks like a real one.
inline constexpr size_t kSaltBytes = 16;
// A longer message is refused before it is parsed; real ones are well under 300 bytes.
inline constexpr size_t kMessageBytesMax = 4096;
// decoy_verifier()'s secret must be unguessable, or an attacker could recompute the decoys and
// tell unknown users from known ones by their salts.
inline constexpr size_t kServerSecretBytesMin = 16;

// What a server stores for a password: never the password, and nothing a client could log in
// with (the stored key is a hash of the client key, which the proof needs).
struct Verifier {
    std::string salt;           // raw bytes
    uint32_t iterations = 0;    // PBKDF2's iteration count
    Sha256Digest stored_key{};  // H(HMAC(SaltedPassword, "Client Key"))
    Sha256Digest server_key{};  // HMAC(SaltedPassword, "Server Key")

    friend bool operator==(const Verifier&, const Verifier&) = default;
};

// True when the iteration count is in [kIterationsMin, kIterationsMax] and the salt's length in
// [kSaltBytesMin, kSaltBytesMax]: what a server accepts to store and to use.
bool valid_verifier(const Verifier& verifier);

// PBKDF2-HMAC-SHA-256 (RFC 8018) of the password, computed by OpenSSL. Costs `iterations` HMACs
// (about a millisecond per 4096). Requires 1 <= iterations <= kIterationsMax.
Sha256Digest salted_password(std::string_view password, std::string_view salt, uint32_t iterations);

// The verifier of a password. Requires a salt of [kSaltBytesMin, kSaltBytesMax] bytes (fresh
// random_bytes(kSaltBytes) for a new password) and iterations in [kIterationsMin, kIterationsMax].
Verifier make_verifier(std::string_view password, std::string_view salt, uint32_t iterations);

// True when `password` is the one the verifier was made from (compared in constant time with
// CRYPTO_memcmp). Requires valid_verifier(verifier). Costs one salted_password().
bool password_matches(const Verifier& verifier, std::string_view password);

// For an unknown user a server must not reveal that it is unknown, so it runs the exchange
// against this verifier and answers "wrong password" as for a known user. Derived from (user,
// server_secret) alone, so a user's decoy is the same on every attempt and on every server of a
// cluster that shares the secret; its salt has kSaltBytes bytes and its count is kIterationsMin.
// No password matches it: that would take a SHA-256 preimage of its stored key. Requires
// server_secret.size() >= kServerSecretBytesMin.
Verifier decoy_verifier(std::string_view user, std::string_view server_secret);

// `n` bytes from OpenSSL's RAND_bytes, for salts and nonces. Not pure: only the edges call it.
// Requires n <= 1024. Stops the process if the generator fails, as no caller can do without it.
std::string random_bytes(size_t n);
// A printable nonce without ',' or '=': base64 of 18 random bytes (24 characters).
std::string random_nonce();

// Why an exchange failed. The code is for the caller's decisions (count a failed login, close the
// connection); the message is for people and logs.
enum class ErrorCode : uint8_t {
    kMalformed,           // the message breaks RFC 5802's grammar or a bound of this module
    kUnsupported,         // well formed, but asks for what this module does not do (see above)
    kNonceMismatch,       // the nonce is not this exchange's
    kWrongPassword,       // server: the proof is wrong (message: exactly "wrong password")
    kServerError,         // client: the server sent "e=..."
    kBadServerSignature,  // client: the server does not know the password's verifier
};

struct Error {
    ErrorCode code = ErrorCode::kMalformed;
    // A sentence, e.g. "malformed client-first-message: the nonce has a character outside
    // printable ASCII". For kWrongPassword exactly "wrong password", which says no more (not
    // whether the user exists); for kServerError "server refused: " and the server's text.
    std::string message;
};

// A parsed client-first-message: what the server needs to look the user up and to go on.
struct ClientFirst {
    // Decoded ("=2C" is ',' again): the name to look up. May be empty: libpq sends none (the
    // PostgreSQL server uses the startup packet's user), so each port decides what empty means.
    std::string user;
    std::string client_nonce;  // printable ASCII without ','
    std::string gs2_header;    // "n,," or "y,,", which the client-final-message must echo
    std::string bare;          // the message without the gs2 header, part of the AuthMessage
};

Result<ClientFirst, Error> parse_client_first(std::string_view message);

// The server's side of one exchange, after parse_client_first() and the user's look-up (with
// decoy_verifier() for an unknown user): send server_first(), then pass the client's answer to
// client_final(), which checks it and gives the server-final-message to send.
class ServerExchange {
public:
    // Requires valid_verifier(verifier), a non-empty first.client_nonce, and a non-empty
    // `server_nonce_suffix` of printable ASCII without ',' (random_nonce() in production). The
    // suffix is what makes a replayed client-final-message useless, so it must be fresh.
    ServerExchange(ClientFirst first, Verifier verifier, std::string server_nonce_suffix);

    // "r=<client nonce><suffix>,s=<base64 salt>,i=<iterations>"; the same on every call.
    const std::string& server_first() const { return server_first_; }

    // Checks the client-final-message: its channel-binding echo (c= must be the base64 of the
    // gs2 header), its nonce, and its proof. Ok: the server-final-message "v=<server signature>"
    // to send. Called at most once per exchange: a client gets one attempt.
    Result<std::string, Error> client_final(std::string_view message);

    // True once client_final() has accepted a proof.
    bool succeeded() const { return state_ == State::kSucceeded; }

private:
    enum class State : uint8_t { kWaitingClientFinal, kFailed, kSucceeded };

    ClientFirst first_;
    Verifier verifier_;
    std::string nonce_;  // the client's nonce followed by ours
    std::string server_first_;
    State state_ = State::kWaitingClientFinal;
};

// The client's side of one exchange: send client_first(), pass the server's first answer to
// server_first() and send what it gives, then check the server's last message with
// server_final(). A client must not treat the server as authentic before server_final() is ok.
class ClientExchange {
public:
    // `user`: the name as typed (escaped here). `client_nonce`: non-empty printable ASCII without
    // ',' (random_nonce() in production); required, as it keeps the proof from being replayed.
    ClientExchange(std::string user, std::string password, std::string client_nonce);

    // "n,,n=<user>,r=<client nonce>", with ',' in the user written "=2C" and '=' written "=3D".
    std::string client_first() const;

    // Checks the server-first-message (our nonce extended by the server's, a salt of
    // [kSaltBytesMin, kSaltBytesMax] bytes, iterations in [kIterationsMin, kIterationsMax]) and
    // computes the proof. Ok: the client-final-message to send. Costs one salted_password().
    // Called once, after client_first().
    Result<std::string, Error> server_first(std::string_view message);

    // Checks the server-final-message: ok when its signature proves the server holds this
    // password's verifier. Called once, after server_first() gave a message.
    Result<std::monostate, Error> server_final(std::string_view message);

    // True once server_final() accepted the server's signature.
    bool succeeded() const { return state_ == State::kSucceeded; }

private:
    enum class State : uint8_t { kStarted, kWaitingServerFinal, kFailed, kSucceeded };

    std::string password_;  // wiped once the proof is computed
    std::string client_nonce_;
    std::string client_first_bare_;    // "n=<escaped user>,r=<client nonce>"
    Sha256Digest server_signature_{};  // what server_final() must see
    State state_ = State::kStarted;
};

}  // namespace raftlock::base::scram
