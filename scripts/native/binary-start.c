/*
 * What the binary's start (scripts/binary-entry.cjs) needs from V8 and the kernel that Node
 * does not expose, so that the start does not copy megabytes it only reads:
 *
 *   latin1(arrayBuffer, offset, length)  an external one-byte string over those bytes, no copy.
 *       For the bundle inside pkg's archive (node:sea's raw asset: memory mapped from the
 *       executable for the life of the process). The bytes are never freed nor written: give
 *       it nothing that can be freed or changed before the process ends.
 *   mapFile(path)  the file's bytes as an ArrayBuffer over a private read-only mapping,
 *       unmapped when the ArrayBuffer is collected (V8's code cache of the previous starts).
 *       Throws an Error with the errno's code (ENOENT, ...) when the file cannot be mapped.
 *
 * Why and what it is worth: docs/performance.md, "Cold start: the bundle without copies".
 * Built by scripts/build-native.mjs into dist/native/binary-start.node (Node-API 10: Node 22.14
 * and later, no Node version compiled in); scripts/package-binary.mjs ships it in the binary.
 */
#define NAPI_VERSION 10
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static napi_value throw_errno (napi_env env, const char* what, int err) {
  char msg[4096 + 128];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(err));
  /* the code as Node names it, for the ones a caller tells apart */
  const char* code = err == ENOENT ? "ENOENT" : err == EACCES ? "EACCES" : "EIO";
  napi_throw_error(env, code, msg);
  return NULL;
}

static napi_value latin1 (napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  void* data;
  size_t size;
  int64_t offset, length;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  if (argc < 3 || napi_get_arraybuffer_info(env, argv[0], &data, &size) != napi_ok ||
      napi_get_value_int64(env, argv[1], &offset) != napi_ok || napi_get_value_int64(env, argv[2], &length) != napi_ok) {
    napi_throw_type_error(env, NULL, "latin1(arrayBuffer, offset, length)");
    return NULL;
  }
  if (offset < 0 || length < 0 || (uint64_t)offset + (uint64_t)length > size) {
    napi_throw_range_error(env, NULL, "latin1: the range is outside the ArrayBuffer");
    return NULL;
  }
  napi_value result;
  bool copied;
  /* no finalizer: the bytes outlive the string (see the top of this file) */
  if (node_api_create_external_string_latin1(env, (char*)data + offset, (size_t)length, NULL, NULL, &result, &copied) != napi_ok) return NULL;
  return result;
}

static void unmap (node_api_basic_env env, void* data, void* hint) {
  munmap(data, (size_t)hint);
}

static napi_value map_file (napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  char path[4096];
  size_t n;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  if (argc < 1 || napi_get_value_string_utf8(env, argv[0], path, sizeof path, &n) != napi_ok || n >= sizeof path - 1) {
    napi_throw_type_error(env, NULL, "mapFile(path)");
    return NULL;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return throw_errno(env, path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return throw_errno(env, path, err);
  }
  if (!S_ISREG(st.st_mode) || st.st_size == 0) {
    close(fd);
    return throw_errno(env, path, EIO);
  }
  void* bytes = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  close(fd);
  if (bytes == MAP_FAILED) return throw_errno(env, path, err);
  napi_value ab;
  if (napi_create_external_arraybuffer(env, bytes, (size_t)st.st_size, unmap, (void*)(size_t)st.st_size, &ab) != napi_ok) {
    munmap(bytes, (size_t)st.st_size);
    return NULL;
  }
  return ab;
}

NAPI_MODULE_INIT () {
  napi_value fn;
  if (napi_create_function(env, "latin1", NAPI_AUTO_LENGTH, latin1, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "latin1", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "mapFile", NAPI_AUTO_LENGTH, map_file, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "mapFile", fn) != napi_ok) return NULL;
  return exports;
}
