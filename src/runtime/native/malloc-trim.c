/*
 * The runtime's native calls, which Node exposes neither of:
 * - glibc's malloc_trim(0): gives the kernel back the free pages inside malloc's arenas, not only
 *   at their tops (what free() alone returns) (--runtime-malloc-trim);
 * - madvise(MADV_DONTNEED) over each read-only shared file mapping of the process (LMDB's files):
 *   their pages leave the process's resident set and stay in the page cache, where the next read
 *   finds them again (a minor fault) (--runtime-map-trim).
 * Why and what each is worth: docs/runtime.md, "glibc malloc" and "LMDB's mapped pages". Built by
 * scripts/build-native.mjs into dist/native/malloc-trim.node (Node-API: no Node version is
 * compiled in); src/runtime/malloc-trim.ts loads it.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <node_api.h>

/* trim(): true when memory was given back to the kernel */
static napi_value trim (napi_env env, napi_callback_info info) {
  napi_value result;
  if (napi_get_boolean(env, malloc_trim(0) == 1, &result) != napi_ok) return NULL;
  return result;
}

/*
 * dropFilePages(): the bytes of the read-only shared file mappings advised (their size, resident or
 * not), or -1 when /proc/self/maps cannot be read. Only mappings that are shared ('s'), readable and
 * neither writable nor executable, of a file: a shared mapping's pages are the file's pages in the
 * page cache, so dropping them from this process loses nothing (a private mapping's could be copies).
 */
static napi_value drop_file_pages (napi_env env, napi_callback_info info) {
  double advised = -1;
  FILE *maps = fopen("/proc/self/maps", "re");
  if (maps != NULL) {
    advised = 0;
    char line[4096];
    while (fgets(line, sizeof line, maps) != NULL) {
      /* a line longer than the buffer (a long path): its head is parsed, the rest skipped */
      if (strchr(line, '\n') == NULL) {
        int c;
        while ((c = fgetc(maps)) != EOF && c != '\n') {}
      }
      unsigned long start, end, inode;
      char perms[5];
      int path = 0;
      if (sscanf(line, "%lx-%lx %4s %*s %*s %lu %n", &start, &end, perms, &inode, &path) < 4) continue;
      if (inode == 0 || path == 0 || line[path] != '/') continue;
      if (strcmp(perms, "r--s") != 0) continue;
      if (madvise((void *)start, end - start, MADV_DONTNEED) == 0) advised += (double)(end - start);
    }
    fclose(maps);
  }
  napi_value result;
  if (napi_create_double(env, advised, &result) != napi_ok) return NULL;
  return result;
}

NAPI_MODULE_INIT () {
  napi_value fn;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "dropFilePages", NAPI_AUTO_LENGTH, drop_file_pages, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "dropFilePages", fn) != napi_ok) return NULL;
  return exports;
}
