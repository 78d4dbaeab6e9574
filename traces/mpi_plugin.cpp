#include "traces/mpi_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

#include "traces/error.h"

namespace protwin::traces {

namespace {

// libprotwin_mpi.so beside the running executable (cli/CMakeLists.txt puts it there).
std::string plugin_path() {
  std::string self(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  PROTWIN_CHECK(n > 0, "mpirun: cannot locate this executable (/proc/self/exe) to find libprotwin_mpi.so");
  self.resize(static_cast<size_t>(n));
  return self.substr(0, self.rfind('/') + 1) + "libprotwin_mpi.so";
}

}  // namespace

bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

void* open_mpi_plugin() {
  const std::string path = plugin_path();
  void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  PROTWIN_CHECK(lib, "mpirun: this process was started by mpirun but cannot load ", path, ": ", ::dlerror(),
                "\nhint: build protwin with MPI (Debian: libopenmpi-dev; `make build` installs it)");
  return lib;
}

void* mpi_plugin_symbol(void* plugin, const char* name) {
  void* sym = ::dlsym(plugin, name);
  PROTWIN_CHECK(sym, "mpirun: libprotwin_mpi.so has no ", name);
  return sym;
}

}  // namespace protwin::traces
