/* assert_fires.c -- a driver for tests/test_debug_build.py: one call of
 * fkm_lloyd_loop_f64 on 4 points in 2-D, with valid input ("ok") or with a
 * NaN in X ("nan"), which breaks a documented precondition of
 * fkm_lloyd_loop.h (finite X, unchecked in release builds).  Built with
 * -DFKM_DEBUG the "nan" call must stop at FKM_ASSERT; built without, it must
 * return (garbage in, garbage out, but no abort and no print).  Exit status:
 * 0 when the call returned, 2 on a usage error. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fkm_lloyd_loop.h"

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "ok") != 0 && strcmp(argv[1], "nan") != 0))
        return 2;
    double X[8] = {0.0, 0.0, 0.1, 0.0, 5.0, 5.0, 5.1, 5.0};
    if (strcmp(argv[1], "nan") == 0)
        X[3] = NAN;
    double centers[4] = {0.0, 0.0, 5.0, 5.0};
    int32_t labels[4];
    double mind[4], inertia = 0.0;
    fkm_index_t n_iter = 0;
    int rc = fkm_lloyd_loop_f64(centers, labels, mind, &n_iter, &inertia, X, NULL,
                                4, 2, 2, 10, 0.0, 0);
    printf("rc=%d labels=%d,%d,%d,%d\n", rc, labels[0], labels[1], labels[2],
           labels[3]);
    return 0;
}
