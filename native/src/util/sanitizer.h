// NSC_UNDER_ASAN: defined when built with AddressSanitizer, by GCC (__SANITIZE_ADDRESS__) or
// clang (__has_feature; clang 14 does not define GCC's macro). Its allocator is not glibc's.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define NSC_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NSC_UNDER_ASAN 1
#endif
#endif
