// sha256.cpp: SHA-256 through OpenSSL's EVP interface (see sha256.h).
#include "kvc/golden/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace kvc::golden {

std::string sha256_hex(const std::uint8_t* data, std::size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data, size, digest, &length, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL EVP_Digest(sha256) failed");
  static const char* digits = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex += digits[digest[i] >> 4];
    hex += digits[digest[i] & 15];
  }
  return hex;
}

}  // namespace kvc::golden
