// libcurl loaded at run time (dlopen), shared by the agent's push= sender (agent/src/push_sender.cpp)
// and `mlpd push` (reader/cli/cmd_push.cpp): neither links libcurl, so a program profiled without
// push= and every other mlpd command never map it and its TLS library. Header-only; include it only
// where <curl/curl.h> is found (MLPD_PUSH_CURL). The codec is the one library under both sides.
#pragma once

#include <curl/curl.h>
#include <dlfcn.h>

#include <string>
#include <type_traits>

namespace mlpd::curl_api {

// Every function either side calls, resolved once: X(member, symbol).
#define MLPD_CURL_FUNCTIONS(X)                         \
  X(global_init, curl_global_init)                     \
  X(easy_init, curl_easy_init)                         \
  X(easy_setopt, curl_easy_setopt)                     \
  X(easy_perform, curl_easy_perform)                   \
  X(easy_getinfo, curl_easy_getinfo)                   \
  X(easy_strerror, curl_easy_strerror)                 \
  X(easy_escape, curl_easy_escape)                     \
  X(easy_cleanup, curl_easy_cleanup)                   \
  X(free, curl_free)                                   \
  X(mime_init, curl_mime_init)                         \
  X(mime_addpart, curl_mime_addpart)                   \
  X(mime_name, curl_mime_name)                         \
  X(mime_filename, curl_mime_filename)                 \
  X(mime_type, curl_mime_type)                         \
  X(mime_data, curl_mime_data)                         \
  X(mime_free, curl_mime_free)                         \
  X(slist_append, curl_slist_append)                   \
  X(slist_free_all, curl_slist_free_all)               \
  X(multi_init, curl_multi_init)                       \
  X(multi_add_handle, curl_multi_add_handle)           \
  X(multi_perform, curl_multi_perform)                 \
  X(multi_info_read, curl_multi_info_read)             \
  X(multi_poll, curl_multi_poll)                       \
  X(multi_remove_handle, curl_multi_remove_handle)     \
  X(multi_wakeup, curl_multi_wakeup)

struct Curl {
#define MLPD_CURL_MEMBER(member, symbol) decltype(&::symbol) member = nullptr;
  MLPD_CURL_FUNCTIONS(MLPD_CURL_MEMBER)
#undef MLPD_CURL_MEMBER
};

// Loads libcurl (OpenSSL's flavour, else GnuTLS's: the same API; Debian installs one or the other)
// into `out`; false with a one-line `error` when it is missing or older than 7.68 (curl_multi_wakeup,
// the newest function used). A library once loaded stays loaded (unloading one others may use is not
// safe).
inline bool load(Curl& out, std::string& error) {
  void* h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!h) h = dlopen("libcurl-gnutls.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = dlerror();
    error = std::string("cannot load libcurl (libcurl.so.4; Debian: libcurl4): ") + (why ? why : "not found");
    return false;
  }
  Curl c;
  auto resolve = [h](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    return fn != nullptr;
  };
#define MLPD_CURL_LOAD(member, symbol) \
  if (!resolve(c.member, #symbol)) {   \
    error = "libcurl.so.4 is too old (7.68 or later is needed: " #symbol " is missing)"; \
    return false;                      \
  }
  MLPD_CURL_FUNCTIONS(MLPD_CURL_LOAD)
#undef MLPD_CURL_LOAD
  out = c;
  return true;
}

}  // namespace mlpd::curl_api
