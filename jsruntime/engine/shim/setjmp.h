/* Empty: dtoa.c includes <setjmp.h> but uses nothing from it, and WASI libc has none. */
