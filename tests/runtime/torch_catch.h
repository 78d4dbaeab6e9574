// Include this instead of <catch2/catch.hpp> in runtime tests: LibTorch's headers bring glog, whose
// CHECK macro would silently replace Catch's. ATen comes first, glog's CHECK is dropped, then Catch.
#pragma once

#include <ATen/ATen.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#undef CHECK

#include <catch2/catch.hpp>
