#ifndef STARLINE_TEST_EXECUTOR_H
#define STARLINE_TEST_EXECUTOR_H

/// The number of threads the test binary's global executor runs jobs on (STARLINE_TEST_WIDTH, default 8), or 0
/// when the Swift runtime's own executor is kept (STARLINE_TEST_WIDTH=0).
int starline_test_executor_width(void);

#endif
