#include "base/digest.h"

#include <climits>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/assert.h"

namespace raftlock::base {

namespace {

// One-shot EVP digest of `data` into a digest of exactly the algorithm's size. A failure here is
// libcrypto unable to run a default-provider digest (no memory, a broken installation): nothing a
// caller could handle, so it stops the process rather than hand out a wrong id or password hash.
template <size_t N>
std::array<uint8_t, N> digest(const EVP_MD* algorithm, std::string_view data) {
    RL_ASSERT_MSG(algorithm != nullptr, "libcrypto has no such digest");
    RL_ASSERT(static_cast<size_t>(EVP_MD_get_size(algorithm)) == N);
    std::array<uint8_t, N> out{};
    unsigned int size = 0;
    const int ok = EVP_Digest(data.data(), data.size(), out.data(), &size, algorithm, nullptr);
    RL_ASSERT_MSG(ok == 1 && size == N, "libcrypto failed to compute a digest");
    return out;
}

}  // namespace

Md5Digest md5(std::string_view data) {
    return digest<16>(EVP_md5(), data);
}

Sha1Digest sha1(std::string_view data) {
    return digest<20>(EVP_sha1(), data);
}

Sha256Digest sha256(std::string_view data) {
    return digest<32>(EVP_sha256(), data);
}

Sha256Digest hmac_sha256(std::string_view key, std::string_view data) {
    RL_ASSERT_MSG(key.size() <= INT_MAX, "an HMAC key of more than 2 GiB");
    Sha256Digest out{};
    unsigned int size = 0;
    // HMAC() reads `key` as bytes; an empty key is legal (RFC 2104), but a null pointer with
    // length 0 is not accepted by every OpenSSL version, so point at a zero byte instead.
    static constexpr uint8_t kEmpty = 0;
    const void* key_bytes = key.empty() ? static_cast<const void*>(&kEmpty) : key.data();
    const uint8_t* result =
        HMAC(EVP_sha256(), key_bytes, static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &size);
    RL_ASSERT_MSG(result != nullptr && size == out.size(), "libcrypto failed to compute an HMAC");
    return out;
}

}  // namespace raftlock::base
