/*
 * gw.c: the app gateway's shared state (gw.h), defined once at the bottom
 * of the layers so that every file may use it.
 */
#include "gw.h"

struct gw gw_state;
