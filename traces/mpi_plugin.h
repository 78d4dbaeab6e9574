// The MPI plugin, libprotwin_mpi.so (sim/distributed/mpi_transport.h), beside the running
// executable: opened only when mpirun started this process, so neither protwin nor protwin-rt links
// libmpi or pays for loading it otherwise. Used by the distributed sweeps (sim/distributed) and the
// runtime's rank group (runtime/comm).
#pragma once

#include <string>

namespace protwin::traces {

// True when the environment says mpirun started this process (OMPI_COMM_WORLD_SIZE, PMIX_RANK,
// PMI_RANK).
bool launched_by_mpirun();

// dlopen of libprotwin_mpi.so beside /proc/self/exe (RTLD_GLOBAL: Open MPI's components resolve
// libmpi's symbols); an Error with a hint when it cannot be loaded. The handle is never closed.
void* open_mpi_plugin();

// A symbol of the plugin, cast to the function type F; an Error naming it when missing.
void* mpi_plugin_symbol(void* plugin, const char* name);
template <class F>
F mpi_plugin_function(void* plugin, const char* name) {
  return reinterpret_cast<F>(mpi_plugin_symbol(plugin, name));
}

}  // namespace protwin::traces
