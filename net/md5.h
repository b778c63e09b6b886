#pragma once

// MD5 (RFC 1321), for PostgreSQL's "md5" password authentication only. MD5 is broken as a
// cryptographic hash; PostgreSQL clients still speak it, and the PostgreSQL front end
// (net/pg_codec.h) offers it next to cleartext passwords. Nothing else in raftlock should use it.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace raftlock::net {

using Md5Digest = std::array<uint8_t, 16>;

// The 16-byte MD5 digest of `data` (any length, any bytes). Pure; linear in the input.
Md5Digest md5(std::string_view data);

// The digest of `data` as 32 lowercase hexadecimal digits, e.g. md5_hex("abc") ==
// "900150983cd24fb0d6963f7d28e17f72".
std::string md5_hex(std::string_view data);

// What a PostgreSQL client sends in its PasswordMessage after AuthenticationMD5Password(salt):
// "md5" + md5_hex(md5_hex(password + user) + the 4 salt bytes), 35 characters. The server
// computes the same from the password it knows and compares. The inner hash is what PostgreSQL
// stores in pg_authid, so a server that keeps only that can use md5_hex(stored + salt) instead.
std::string pg_md5_password(std::string_view password,
                            std::string_view user,
                            std::array<uint8_t, 4> salt);

}  // namespace raftlock::net
