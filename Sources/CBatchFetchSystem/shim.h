#ifndef BATCHFETCH_CSYSTEM_SHIM_H
#define BATCHFETCH_CSYSTEM_SHIM_H
/* C calls Swift's Glibc module does not import: glibc declares syncfs(2) and
   copy_file_range(2) only under _GNU_SOURCE, which the module does not set, the module leaves
   out malloc.h, ioctl(2) is variadic, and posix_spawn_file_actions_addchdir_np(3) is declared
   only under _GNU_SOURCE — and spawn.h cannot be included here: under _GNU_SOURCE it brings
   in sys/select.h, whose fd_set then differs from the one the Dispatch module saw (a clean build
   fails on `__fds_bits`), so that one function is declared by hand, its first argument as the
   pointer it is. Each is
   wrapped in a function of our own, so the Swift side calls a declared C function instead of
   guessing a symbol's signature with @_silgen_name. */
#ifdef __linux__
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/fs.h>

/* Flushes the file system that holds `descriptor` (syncfs(2)). */
static inline int batchfetch_syncfs(int descriptor) { return syncfs(descriptor); }

/* Caps glibc's malloc arenas (mallopt(3) with M_ARENA_MAX). */
static inline int batchfetch_set_arena_max(int arenas) { return mallopt(M_ARENA_MAX, arenas); }

/* Makes `destination` share `source`'s blocks (ioctl FICLONE: a reflink, on btrfs, xfs and
   others); fails with EOPNOTSUPP, EXDEV or EINVAL where the file system cannot. */
static inline int batchfetch_clone(int destination, int source) { return ioctl(destination, FICLONE, source); }

/* copy_file_range(2): the kernel copies (or shares) up to `length` bytes at the descriptors'
   offsets, which it advances. */
static inline long batchfetch_copy_file_range(int source, long long *sourceOffset, int destination,
                                              long long *destinationOffset, unsigned long length) {
    return (long)copy_file_range(source, (__off64_t *)sourceOffset, destination, (__off64_t *)destinationOffset, length, 0);
}

/* Swaps two names atomically (renameat2(2) with RENAME_EXCHANGE): an extracted tree replaces
   the old one with `into` present throughout. Fails with EINVAL or ENOSYS where the file system
   or kernel cannot. */
static inline int batchfetch_exchange(int fromDirectory, const char *from, int toDirectory, const char *to) {
    return renameat2(fromDirectory, from, toDirectory, to, RENAME_EXCHANGE);
}

/* The spawned process starts in `path` (a hook command runs in the manifest's directory);
   `actions` is a posix_spawn_file_actions_t (glibc 2.29 and later). */
extern int posix_spawn_file_actions_addchdir_np(void *actions, const char *path);
static inline int batchfetch_spawn_chdir(void *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

/* Bytes malloc has handed out and not taken back, over all arenas (mallinfo2(3)). */
static inline unsigned long batchfetch_heap_in_use(void) { struct mallinfo2 info = mallinfo2(); return info.uordblks + info.hblkhd; }
#endif
#endif
