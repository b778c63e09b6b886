#include "base/scram.h"

#include <climits>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "base/assert.h"
#include "base/base64.h"

namespace raftlock::base::scram {

namespace {

// The only gs2 header our client sends: no channel binding, no authorization identity. Its base64
// is the "c=biws" of every client-final-message without channel binding.
constexpr std::string_view kClientGs2Header = "n,,";
constexpr size_t kRandomBytesMax = 1024;
constexpr size_t kNonceRandomBytes = 18;  // a multiple of 3, so its base64 has no '='

static_assert(kSaltBytes >= kSaltBytesMin);
static_assert(kSaltBytes <= kSaltBytesMax);
static_assert(kSaltBytes <= Sha256Digest{}.size(), "a decoy's salt is cut from one HMAC");

Error malformed(std::string_view what, std::string_view why) {
    return Error{ErrorCode::kMalformed, fmt::format("malformed {}: {}", what, why)};
}

Error unsupported(std::string_view what, std::string_view why) {
    return Error{ErrorCode::kUnsupported, fmt::format("unsupported {}: {}", what, why)};
}

Error too_long(std::string_view what) {
    return malformed(what, fmt::format("longer than {} bytes", kMessageBytesMax));
}

std::string_view as_chars(const Sha256Digest& digest) {
    return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

// Constant time, so that how long a refusal takes tells nothing about how much of a key matched.
bool same_digest(const Sha256Digest& a, const Sha256Digest& b) {
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Sha256Digest xor_digests(const Sha256Digest& a, const Sha256Digest& b) {
    Sha256Digest out{};
    for (size_t i = 0; i < out.size(); ++i) {
        out[i] = a[i] ^ b[i];
    }
    return out;
}

// The keys RFC 5802 derives from a SaltedPassword.
struct ScramKeys {
    Sha256Digest client_key{};
    Sha256Digest stored_key{};
    Sha256Digest server_key{};
};

ScramKeys scram_keys(const Sha256Digest& salted) {
    ScramKeys keys;
    keys.client_key = hmac_sha256(as_chars(salted), "Client Key");
    keys.stored_key = sha256(as_chars(keys.client_key));
    keys.server_key = hmac_sha256(as_chars(salted), "Server Key");
    return keys;
}

// The attributes of a message, split at every ','. The caller has bounded the message, and each
// turn of the loop moves past one ',', so it runs at most kMessageBytesMax + 1 times.
std::vector<std::string_view> split_attributes(std::string_view message) {
    RL_ASSERT(message.size() <= kMessageBytesMax);
    std::vector<std::string_view> fields;
    size_t start = 0;
    while (true) {
        const size_t comma = message.find(',', start);
        if (comma == std::string_view::npos) {
            fields.push_back(message.substr(start));
            break;
        }
        fields.push_back(message.substr(start, comma - start));
        start = comma + 1;
    }
    RL_ASSERT(!fields.empty());
    RL_ASSERT(fields.size() <= message.size() + 1);
    return fields;
}

// The value of `field` when it is the attribute `name` ("r=abc" gives "abc"), else nullopt.
std::optional<std::string_view> attribute_value(std::string_view field, char name) {
    if (field.size() < 2 || field[0] != name || field[1] != '=') {
        return std::nullopt;
    }
    return field.substr(2);
}

// Non-empty printable ASCII without ',': RFC 5802's nonce, and the server error reasons we pass
// on to people and logs.
bool printable_without_comma(std::string_view text) {
    if (text.empty()) {
        return false;
    }
    for (const char c : text) {
        if (c < 0x21 || c > 0x7e || c == ',') {
            return false;
        }
    }
    return true;
}

// Well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points above U+10FFFF)
// without NUL, which is what RFC 5802's value-char allows.
bool valid_utf8_without_nul(std::string_view text) {
    size_t i = 0;
    while (i < text.size()) {
        const auto lead = static_cast<uint8_t>(text[i]);
        if (lead == 0) {
            return false;
        }
        if (lead < 0x80) {
            ++i;
            continue;
        }
        size_t length = 0;
        uint32_t code_point = 0;
        uint32_t code_point_min = 0;
        if ((lead & 0xe0) == 0xc0) {
            length = 2;
            code_point = lead & 0x1f;
            code_point_min = 0x80;
        } else if ((lead & 0xf0) == 0xe0) {
            length = 3;
            code_point = lead & 0x0f;
            code_point_min = 0x800;
        } else if ((lead & 0xf8) == 0xf0) {
            length = 4;
            code_point = lead & 0x07;
            code_point_min = 0x10000;
        } else {
            return false;  // a continuation byte without its lead, or 0xf8..0xff
        }
        if (length > text.size() - i) {
            return false;
        }
        for (size_t k = 1; k < length; ++k) {
            const auto next = static_cast<uint8_t>(text[i + k]);
            if ((next & 0xc0) != 0x80) {
                return false;
            }
            code_point = (code_point << 6) | (next & 0x3f);
        }
        if (code_point < code_point_min || code_point > 0x10ffff ||
            (code_point >= 0xd800 && code_point <= 0xdfff)) {
            return false;
        }
        i += length;
    }
    return true;
}

// A user name as a saslname: ',' and '=' would end or start an attribute, so they are escaped.
std::string escape_user(std::string_view user) {
    std::string out;
    out.reserve(user.size());
    for (const char c : user) {
        if (c == ',') {
            out += "=2C";
        } else if (c == '=') {
            out += "=3D";
        } else {
            out += c;
        }
    }
    return out;
}

// The inverse of escape_user(); nullopt on any other '=' (RFC 5802 makes that an error).
std::optional<std::string> unescape_user(std::string_view saslname) {
    std::string out;
    out.reserve(saslname.size());
    for (size_t i = 0; i < saslname.size(); ++i) {
        if (saslname[i] != '=') {
            out += saslname[i];
            continue;
        }
        const std::string_view escape = saslname.substr(i, 3);  // shorter at the end
        if (escape == "=2C") {
            out += ',';
        } else if (escape == "=3D") {
            out += '=';
        } else {
            return std::nullopt;
        }
        i += 2;
    }
    return out;
}

// base64 that must be canonical: padded, nothing after the padding, unused bits zero. The shared
// decoder is lenient (it stops at the first '='), so the result must encode back to the input;
// that leaves exactly one accepted spelling of each value.
std::optional<std::string> decode_base64_strictly(std::string_view text) {
    std::optional<std::string> bytes = base64_decode(text);
    if (!bytes || base64_encode(*bytes) != text) {
        return std::nullopt;
    }
    return bytes;
}

std::optional<Sha256Digest> decode_digest(std::string_view text) {
    const std::optional<std::string> bytes = decode_base64_strictly(text);
    if (!bytes || bytes->size() != Sha256Digest{}.size()) {
        return std::nullopt;
    }
    Sha256Digest out{};
    for (size_t i = 0; i < out.size(); ++i) {
        out[i] = static_cast<uint8_t>((*bytes)[i]);
    }
    return out;
}

// RFC 5802's optional extensions ("x=value" after the defined attributes) are checked and then
// ignored, as section 7 requires of unknown ones. A letter the RFC defines is not an extension:
// it is a repeated or misplaced attribute, which an ambiguous message must not be allowed.
std::optional<std::string> extension_problem(std::string_view field) {
    constexpr std::string_view kDefinedNames = "acehimnprsv";
    const char name = field.empty() ? '\0' : field[0];
    const bool letter = (name >= 'a' && name <= 'z') || (name >= 'A' && name <= 'Z');
    if (!letter || field.size() < 3 || field[1] != '=') {
        return std::string("an attribute is not a letter, '=' and a value");
    }
    if (kDefinedNames.find(name) != std::string_view::npos) {
        return fmt::format("attribute '{}' is repeated or out of order", name);
    }
    if (!valid_utf8_without_nul(field.substr(2))) {
        return fmt::format("attribute '{}' is not UTF-8 without NUL", name);
    }
    return std::nullopt;
}

// RFC 5802's 1*DIGIT read strictly: digits only, no leading zero, at most ten (no overflow).
std::optional<uint64_t> parse_count(std::string_view text) {
    if (text.empty() || text.size() > 10 || text[0] == '0') {
        return std::nullopt;
    }
    uint64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        value = value * 10 + static_cast<uint64_t>(c - '0');
    }
    return value;
}

// What the client takes from a server-first-message.
struct ServerFirst {
    std::string_view nonce;
    std::string salt;
    uint32_t iterations = 0;
};

Result<ServerFirst, Error> parse_server_first(std::string_view message,
                                              std::string_view client_nonce) {
    constexpr std::string_view kWhat = "server-first-message";
    if (message.size() > kMessageBytesMax) {
        return too_long(kWhat);
    }
    const std::vector<std::string_view> fields = split_attributes(message);
    if (fields[0].starts_with("m=")) {
        return unsupported(kWhat, "a mandatory extension (m=)");
    }
    if (fields.size() < 3) {
        return malformed(kWhat, "expected r=, s= and i=");
    }
    const std::optional<std::string_view> nonce = attribute_value(fields[0], 'r');
    if (!nonce || !printable_without_comma(*nonce)) {
        return malformed(kWhat, "the first attribute is not r= with a printable nonce");
    }
    // The server's part is what makes this exchange's proof useless in another one.
    if (nonce->size() <= client_nonce.size() || !nonce->starts_with(client_nonce)) {
        return Error{ErrorCode::kNonceMismatch,
                     "the server's nonce does not extend the client's nonce"};
    }
    const std::optional<std::string_view> salt_text = attribute_value(fields[1], 's');
    std::optional<std::string> salt;
    if (salt_text) {
        salt = decode_base64_strictly(*salt_text);
    }
    if (!salt) {
        return malformed(kWhat, "the second attribute is not s= with a base64 salt");
    }
    if (salt->size() < kSaltBytesMin || salt->size() > kSaltBytesMax) {
        return unsupported(kWhat, fmt::format("a salt of {} bytes, outside [{}, {}]", salt->size(),
                                              kSaltBytesMin, kSaltBytesMax));
    }
    const std::optional<std::string_view> count_text = attribute_value(fields[2], 'i');
    std::optional<uint64_t> count;
    if (count_text) {
        count = parse_count(*count_text);
    }
    if (!count) {
        return malformed(kWhat, "the third attribute is not i= with a decimal iteration count");
    }
    if (*count < kIterationsMin || *count > kIterationsMax) {
        return unsupported(kWhat, fmt::format("an iteration count of {}, outside [{}, {}]", *count,
                                              kIterationsMin, kIterationsMax));
    }
    for (size_t i = 3; i < fields.size(); ++i) {
        if (std::optional<std::string> problem = extension_problem(fields[i])) {
            return malformed(kWhat, *problem);
        }
    }
    return ServerFirst{*nonce, std::move(*salt), static_cast<uint32_t>(*count)};
}

}  // namespace

bool valid_verifier(const Verifier& verifier) {
    return verifier.iterations >= kIterationsMin && verifier.iterations <= kIterationsMax &&
           verifier.salt.size() >= kSaltBytesMin && verifier.salt.size() <= kSaltBytesMax;
}

Sha256Digest salted_password(std::string_view password,
                             std::string_view salt,
                             uint32_t iterations) {
    RL_ASSERT(iterations >= 1);
    RL_ASSERT(iterations <= kIterationsMax);
    RL_ASSERT(password.size() <= INT_MAX);
    RL_ASSERT(salt.size() <= INT_MAX);
    // An empty string_view may carry a null pointer; give libcrypto a real byte to point at.
    static constexpr char kNoBytes[1] = {0};
    const char* password_bytes = password.empty() ? kNoBytes : password.data();
    const char* salt_bytes = salt.empty() ? kNoBytes : salt.data();
    Sha256Digest out{};
    const int ok = PKCS5_PBKDF2_HMAC(password_bytes, static_cast<int>(password.size()),
                                     reinterpret_cast<const unsigned char*>(salt_bytes),
                                     static_cast<int>(salt.size()), static_cast<int>(iterations),
                                     EVP_sha256(), static_cast<int>(out.size()), out.data());
    RL_ASSERT_MSG(ok == 1, "libcrypto failed to compute PBKDF2");
    return out;
}

Verifier make_verifier(std::string_view password, std::string_view salt, uint32_t iterations) {
    Verifier verifier;
    verifier.salt = std::string(salt);
    verifier.iterations = iterations;
    RL_ASSERT_MSG(valid_verifier(verifier), "a salt or iteration count outside scram's bounds");
    Sha256Digest salted = salted_password(password, salt, iterations);
    const ScramKeys keys = scram_keys(salted);
    OPENSSL_cleanse(salted.data(), salted.size());
    verifier.stored_key = keys.stored_key;
    verifier.server_key = keys.server_key;
    return verifier;
}

bool password_matches(const Verifier& verifier, std::string_view password) {
    RL_ASSERT(valid_verifier(verifier));
    Sha256Digest salted = salted_password(password, verifier.salt, verifier.iterations);
    const ScramKeys keys = scram_keys(salted);
    OPENSSL_cleanse(salted.data(), salted.size());
    return same_digest(keys.stored_key, verifier.stored_key);
}

Verifier decoy_verifier(std::string_view user, std::string_view server_secret) {
    RL_ASSERT(server_secret.size() >= kServerSecretBytesMin);
    // One HMAC per field, each under its own label, so that no field says anything about another;
    // the labels differ before the user's name begins, so no two (label, user) inputs coincide.
    const std::string name(user);
    const Sha256Digest salt = hmac_sha256(server_secret, "raftlock scram decoy salt:" + name);
    Verifier verifier;
    verifier.salt = std::string(as_chars(salt).substr(0, kSaltBytes));
    verifier.iterations = kIterationsMin;
    verifier.stored_key = hmac_sha256(server_secret, "raftlock scram decoy stored key:" + name);
    verifier.server_key = hmac_sha256(server_secret, "raftlock scram decoy server key:" + name);
    RL_ASSERT(valid_verifier(verifier));
    return verifier;
}

std::string random_bytes(size_t n) {
    RL_ASSERT(n <= kRandomBytesMax);
    std::string out(n, '\0');
    if (n == 0) {
        return out;
    }
    const int ok = RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n));
    // A salt or nonce that is not random breaks SCRAM silently; better not to go on at all.
    RL_ASSERT_MSG(ok == 1, "libcrypto's random generator failed");
    return out;
}

std::string random_nonce() {
    std::string nonce = base64_encode(random_bytes(kNonceRandomBytes));
    RL_ASSERT(printable_without_comma(nonce));
    RL_ASSERT(nonce.find('=') == std::string::npos);
    return nonce;
}

Result<ClientFirst, Error> parse_client_first(std::string_view message) {
    constexpr std::string_view kWhat = "client-first-message";
    if (message.size() > kMessageBytesMax) {
        return too_long(kWhat);
    }
    const std::vector<std::string_view> fields = split_attributes(message);
    if (fields[0].starts_with("p=")) {
        return unsupported(kWhat, "channel binding (SCRAM-SHA-256-PLUS) is not offered");
    }
    if (fields[0] != "n" && fields[0] != "y") {
        return malformed(kWhat, "the gs2 header does not start with n, y or p=");
    }
    if (fields.size() < 4) {
        return malformed(kWhat, "expected a gs2 header, n= and r=");
    }
    if (fields[1].starts_with("a=")) {
        return unsupported(kWhat, "an authorization identity (a=)");
    }
    if (!fields[1].empty()) {
        return malformed(kWhat, "the gs2 header's second attribute is neither empty nor a=");
    }
    if (fields[2].starts_with("m=")) {
        return unsupported(kWhat, "a mandatory extension (m=)");
    }
    const std::optional<std::string_view> saslname = attribute_value(fields[2], 'n');
    if (!saslname) {
        return malformed(kWhat, "the attribute after the gs2 header is not n=");
    }
    std::optional<std::string> user = unescape_user(*saslname);
    if (!user) {
        return malformed(kWhat, "the user name has an '=' that is not \"=2C\" or \"=3D\"");
    }
    // Empty is allowed: libpq sends "n=" and PostgreSQL takes the user of the startup packet.
    if (!valid_utf8_without_nul(*user)) {
        return malformed(kWhat, "the user name is not UTF-8 without NUL");
    }
    const std::optional<std::string_view> nonce = attribute_value(fields[3], 'r');
    if (!nonce || !printable_without_comma(*nonce)) {
        return malformed(kWhat, "the attribute after n= is not r= with a printable nonce");
    }
    for (size_t i = 4; i < fields.size(); ++i) {
        if (std::optional<std::string> problem = extension_problem(fields[i])) {
            return malformed(kWhat, *problem);
        }
    }
    ClientFirst first;
    first.user = std::move(*user);
    first.client_nonce = std::string(*nonce);
    first.gs2_header = std::string(message.substr(0, fields[0].size() + fields[1].size() + 2));
    first.bare = std::string(message.substr(first.gs2_header.size()));
    RL_ASSERT(first.gs2_header == "n,," || first.gs2_header == "y,,");
    return first;
}

ServerExchange::ServerExchange(ClientFirst first,
                               Verifier verifier,
                               std::string server_nonce_suffix)
    : first_(std::move(first)), verifier_(std::move(verifier)) {
    RL_ASSERT(valid_verifier(verifier_));
    RL_ASSERT(printable_without_comma(first_.client_nonce));
    RL_ASSERT(printable_without_comma(server_nonce_suffix));
    RL_ASSERT(first_.gs2_header == "n,," || first_.gs2_header == "y,,");
    nonce_ = first_.client_nonce + server_nonce_suffix;
    server_first_ =
        fmt::format("r={},s={},i={}", nonce_, base64_encode(verifier_.salt), verifier_.iterations);
}

Result<std::string, Error> ServerExchange::client_final(std::string_view message) {
    RL_ASSERT_MSG(state_ == State::kWaitingClientFinal, "one client-final-message per exchange");
    state_ = State::kFailed;  // until the proof is checked: a client gets one attempt
    constexpr std::string_view kWhat = "client-final-message";
    if (message.size() > kMessageBytesMax) {
        return too_long(kWhat);
    }
    const std::vector<std::string_view> fields = split_attributes(message);
    if (fields.size() < 3) {
        return malformed(kWhat, "expected c=, r= and p=");
    }
    const std::optional<std::string_view> binding = attribute_value(fields[0], 'c');
    if (!binding || *binding != base64_encode(first_.gs2_header)) {
        return malformed(kWhat, "c= is not the base64 of the client-first-message's gs2 header");
    }
    const std::optional<std::string_view> nonce = attribute_value(fields[1], 'r');
    if (!nonce) {
        return malformed(kWhat, "the second attribute is not r=");
    }
    if (*nonce != nonce_) {
        return Error{ErrorCode::kNonceMismatch, "the nonce is not this exchange's"};
    }
    for (size_t i = 2; i + 1 < fields.size(); ++i) {
        if (std::optional<std::string> problem = extension_problem(fields[i])) {
            return malformed(kWhat, *problem);
        }
    }
    const std::optional<std::string_view> proof_text = attribute_value(fields.back(), 'p');
    std::optional<Sha256Digest> proof;
    if (proof_text) {
        proof = decode_digest(*proof_text);
    }
    if (!proof) {
        return malformed(kWhat, "the last attribute is not p= with the base64 of 32 bytes");
    }
    const std::string_view without_proof =
        message.substr(0, message.size() - fields.back().size() - 1);
    const std::string auth_message =
        fmt::format("{},{},{}", first_.bare, server_first_, without_proof);
    const Sha256Digest client_signature = hmac_sha256(as_chars(verifier_.stored_key), auth_message);
    const Sha256Digest client_key = xor_digests(*proof, client_signature);
    if (!same_digest(sha256(as_chars(client_key)), verifier_.stored_key)) {
        return Error{ErrorCode::kWrongPassword, "wrong password"};
    }
    state_ = State::kSucceeded;
    const Sha256Digest server_signature = hmac_sha256(as_chars(verifier_.server_key), auth_message);
    return "v=" + base64_encode(as_chars(server_signature));
}

ClientExchange::ClientExchange(std::string user, std::string password, std::string client_nonce)
    : password_(std::move(password)), client_nonce_(std::move(client_nonce)) {
    RL_ASSERT(printable_without_comma(client_nonce_));
    client_first_bare_ = fmt::format("n={},r={}", escape_user(user), client_nonce_);
}

std::string ClientExchange::client_first() const {
    return std::string(kClientGs2Header) + client_first_bare_;
}

Result<std::string, Error> ClientExchange::server_first(std::string_view message) {
    RL_ASSERT_MSG(state_ == State::kStarted, "one server-first-message per exchange");
    state_ = State::kFailed;  // until the message has been checked
    Result<ServerFirst, Error> parsed = parse_server_first(message, client_nonce_);
    if (!parsed) {
        return parsed.error();
    }
    Sha256Digest salted = salted_password(password_, parsed->salt, parsed->iterations);
    // The password is not needed again: wipe it now rather than whenever this object dies.
    OPENSSL_cleanse(password_.data(), password_.size());
    password_.clear();
    const ScramKeys keys = scram_keys(salted);
    OPENSSL_cleanse(salted.data(), salted.size());

    const std::string without_proof =
        fmt::format("c={},r={}", base64_encode(kClientGs2Header), parsed->nonce);
    const std::string auth_message =
        fmt::format("{},{},{}", client_first_bare_, message, without_proof);
    const Sha256Digest client_signature = hmac_sha256(as_chars(keys.stored_key), auth_message);
    const Sha256Digest proof = xor_digests(keys.client_key, client_signature);
    server_signature_ = hmac_sha256(as_chars(keys.server_key), auth_message);
    state_ = State::kWaitingServerFinal;
    return fmt::format("{},p={}", without_proof, base64_encode(as_chars(proof)));
}

Result<std::monostate, Error> ClientExchange::server_final(std::string_view message) {
    RL_ASSERT_MSG(state_ == State::kWaitingServerFinal, "server-final-message out of order");
    state_ = State::kFailed;  // until the signature is checked
    constexpr std::string_view kWhat = "server-final-message";
    if (message.size() > kMessageBytesMax) {
        return too_long(kWhat);
    }
    const std::vector<std::string_view> fields = split_attributes(message);
    // The server's reason is shown to people and logged, so only printable ASCII is passed on
    // (RFC 5802's server-error-values are all such words); it is never echoed when it is not.
    if (const std::optional<std::string_view> reason = attribute_value(fields[0], 'e')) {
        if (!printable_without_comma(*reason)) {
            return malformed(kWhat, "e= is not a printable reason");
        }
        return Error{ErrorCode::kServerError, fmt::format("server refused: {}", *reason)};
    }
    const std::optional<std::string_view> signature_text = attribute_value(fields[0], 'v');
    std::optional<Sha256Digest> signature;
    if (signature_text) {
        signature = decode_digest(*signature_text);
    }
    if (!signature) {
        return malformed(kWhat, "the first attribute is neither e= nor v= with 32 base64 bytes");
    }
    for (size_t i = 1; i < fields.size(); ++i) {
        if (std::optional<std::string> problem = extension_problem(fields[i])) {
            return malformed(kWhat, *problem);
        }
    }
    if (!same_digest(*signature, server_signature_)) {
        return Error{ErrorCode::kBadServerSignature,
                     "the server's signature is wrong: it does not hold this password's verifier"};
    }
    state_ = State::kSucceeded;
    return std::monostate{};
}

}  // namespace raftlock::base::scram
