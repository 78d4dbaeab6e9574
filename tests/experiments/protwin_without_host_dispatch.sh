#!/bin/sh
# protwin with --no-host-dispatch appended: predictions that differ from the committed ones, which
# the quick check must report (tests/experiments/CMakeLists.txt).
exec "$PROTWIN_UNDER_TEST" "$@" --no-host-dispatch
