#include <zbar.h>

// zbar_fourcc is a function-like macro; Swift cannot call it.
static inline unsigned long starline_zbar_fourcc(char a, char b, char c, char d) {
    return zbar_fourcc(a, b, c, d);
}
