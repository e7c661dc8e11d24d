// sha256.h: SHA-256 of a byte range as lowercase hex (OpenSSL libcrypto), for fixture payloads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvc::golden {

std::string sha256_hex(const std::uint8_t* data, std::size_t size);
inline std::string sha256_hex(const std::vector<std::uint8_t>& bytes) { return sha256_hex(bytes.data(), bytes.size()); }

}  // namespace kvc::golden
