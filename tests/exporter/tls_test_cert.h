// A self-signed certificate and key made at test time with OpenSSL's C API (no files in the
// repository, nothing to expire): SAN IP:127.0.0.1 and DNS:localhost, usable as its own CA.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace nccl_triage::testing {

struct TestCert {
  std::string cert_path;
  std::string key_path;
};

inline void AddExt(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) throw std::runtime_error("X509V3_EXT_conf_nid failed");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// Writes cert.pem and key.pem into `dir`.
inline TestCert MakeSelfSignedCert(const std::string& dir, const char* common_name = "localhost") {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (!key) throw std::runtime_error("EVP_EC_gen failed");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  AddExt(cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExt(cert, NID_key_usage, "critical,digitalSignature,keyCertSign");
  AddExt(cert, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  if (X509_sign(cert, key, EVP_sha256()) == 0) throw std::runtime_error("X509_sign failed");
  TestCert out{dir + "/cert.pem", dir + "/key.pem"};
  FILE* f = std::fopen(out.cert_path.c_str(), "w");
  PEM_write_X509(f, cert);
  std::fclose(f);
  f = std::fopen(out.key_path.c_str(), "w");
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

}  // namespace nccl_triage::testing
