// Oracle: tests/reference/reference_model.py — the same two models in plain PyTorch (Debian's
// /usr/bin/python3 + python3-torch), autograd gradients and 10 steps of torch.optim.AdamW. protwin
// runs the same 10 steps with its explicit backward and CPU AdamW. SKIPs when python3 or torch is
// missing.
#include "torch_catch.h"  // first: see there

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model_fixtures.h"
#include "runtime/model/transformer.h"
#include "runtime/optim/cpu_adam.h"

using namespace protwin::rt;
using namespace protwin::rt::testing;
namespace fs = std::filesystem;

namespace {

constexpr const char* kPython = "/usr/bin/python3";
constexpr int kSteps = 10;

// Empty when python3 with torch is usable, else the reason to skip.
std::string python_torch_missing() {
  if (!fs::exists(kPython)) return std::string(kPython) + " not found";
  const std::string cmd = std::string(kPython) + " -c 'import torch' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return "python3 cannot import torch (install python3-torch)";
  return "";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<int64_t> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

}  // namespace

TEST_CASE("loss, gradients and 10 AdamW steps match the PyTorch reference", "[runtime][reference]") {
  const std::string missing = python_torch_missing();
  if (!missing.empty()) {
    WARN("SKIPPED: " << missing);
    return;
  }
  const ModelSpec cfg = GENERATE(tiny_gpt2(), tiny_llama());
  INFO("family " << cfg.family);
  const std::vector<at::Tensor> params = test_params(cfg, 2024);
  const at::Tensor tokens = random_tokens(cfg, 21), targets = random_tokens(cfg, 22);
  AdamConfig adam;
  adam.lr = 1e-3;
  adam.weight_decay = 0.1;
  adam.decoupled_weight_decay = true;

  const fs::path dir = fs::path(PROTWIN_BINARY_DIR) / "tests" / "runtime" /
                       ("reference_" + cfg.family + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  nlohmann::json in = {{"family", cfg.family}, {"hidden", cfg.hidden},
                       {"layers", cfg.layers},            {"heads", cfg.heads},
                       {"kv_heads", cfg.kv_heads},        {"ffn_hidden", cfg.ffn_hidden},
                       {"vocab", cfg.vocab},              {"max_seq", cfg.max_positions},
                       {"norm_eps", kNormEps},        {"rope_theta", kRopeTheta},
                       {"batch", kBatch},                 {"seq", kSeq},
                       {"tokens", to_vector(tokens)},     {"targets", to_vector(targets)},
                       {"steps", kSteps}};
  in["adamw"] = {{"lr", adam.lr}, {"beta1", adam.beta1}, {"beta2", adam.beta2},
                 {"eps", adam.eps}, {"weight_decay", adam.weight_decay}};
  const auto specs = stored_parameters(cfg);
  for (const ParamTensor& s : specs) in["params"].push_back({{"name", s.name}, {"shape", s.shape}});
  std::ofstream(dir / "input.json") << in.dump();
  {
    std::ofstream bin(dir / "params.bin", std::ios::binary);
    for (const at::Tensor& p : params)
      bin.write(static_cast<const char*>(p.data_ptr()), static_cast<std::streamsize>(p.nbytes()));
  }
  const std::string cmd = std::string(kPython) + " " + PROTWIN_SOURCE_DIR +
                          "/tests/reference/reference_model.py " + dir.string() + " >" +
                          (dir / "log.txt").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  INFO("reference script output:\n" << slurp(dir / "log.txt"));
  REQUIRE(rc == 0);
  const nlohmann::json out = nlohmann::json::parse(slurp(dir / "output.json"));
  const std::vector<double> ref_losses = out.at("losses").get<std::vector<double>>();
  REQUIRE(ref_losses.size() == static_cast<size_t>(kSteps));
  const std::string grads_bin = slurp(dir / "grads.bin");
  REQUIRE(grads_bin.size() == static_cast<size_t>(cfg.parameter_count()) * sizeof(float));

  // protwin: explicit forward/backward + CPU AdamW, one state per parameter tensor.
  std::vector<at::Tensor> p, g, m, v;
  for (const at::Tensor& t : params) {
    p.push_back(t.clone());
    g.push_back(at::zeros_like(t));
    m.push_back(at::zeros_like(t));
    v.push_back(at::zeros_like(t));
  }
  const ModelWeights w = bind_weights(cfg, p);
  ModelWeights gw = bind_weights(cfg, g);
  for (int step = 1; step <= kSteps; ++step) {
    for (at::Tensor& t : g) t.zero_();
    ModelActs acts;
    const double loss = model_forward(cfg, w, tokens, targets, acts);
    model_backward(cfg, w, acts, gw);
    INFO("step " << step << " protwin " << loss << " torch " << ref_losses[step - 1]);
    const double rel_loss_diff = std::abs(loss - ref_losses[step - 1]) / std::abs(ref_losses[step - 1]);
    CHECK(rel_loss_diff <= 1e-5);
    if (step == 1) {
      int64_t off = 0;
      const float* ref = reinterpret_cast<const float*>(grads_bin.data());
      for (size_t i = 0; i < specs.size(); ++i) {
        const at::Tensor r = at::from_blob(const_cast<float*>(ref + off), specs[i].shape, at::kFloat);
        INFO(specs[i].name);
        const double grad_diff = max_abs_diff(g[i], r);
        CHECK(grad_diff <= 1e-4);
        off += specs[i].numel;
      }
    }
    for (size_t i = 0; i < p.size(); ++i)
      adam_step_cpu(adam, step,
                    AdamBuffers{p[i].data_ptr<float>(), g[i].data_ptr<float>(),
                                m[i].data_ptr<float>(), v[i].data_ptr<float>(), p[i].numel()});
  }
  CHECK(ref_losses.back() < ref_losses.front());  // the 10 steps really train
  fs::remove_all(dir);
}
