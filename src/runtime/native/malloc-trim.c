/*
 * glibc's malloc_trim(0) for JavaScript: gives the kernel back the free pages
 * inside malloc's arenas, not only at their tops (what free() alone returns).
 * Node exposes neither malloc_trim() nor mallopt(); this is the whole addon.
 * Why and what it is worth: docs/runtime.md, "glibc malloc". Built by
 * scripts/build-native.mjs into dist/native/malloc-trim.node (Node-API: no
 * Node version is compiled in); src/runtime/malloc-trim.ts loads it.
 */
#include <malloc.h>
#include <node_api.h>

/* trim(): true when memory was given back to the kernel */
static napi_value trim (napi_env env, napi_callback_info info) {
  napi_value result;
  if (napi_get_boolean(env, malloc_trim(0) == 1, &result) != napi_ok) return NULL;
  return result;
}

NAPI_MODULE_INIT () {
  napi_value fn;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", fn) != napi_ok) return NULL;
  return exports;
}
