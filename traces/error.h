// protwin::Error and the two check macros (DESIGN §9).
//
// PROTWIN_CHECK is for anything a user can cause (bad files, flags, plans that do not fit);
// PROTWIN_ASSERT is for internal invariants. Both throw; only main() catches. Messages are built
// only on failure, so checks on hot paths cost one branch.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace protwin {

enum class ErrorKind { kUser, kInternal };

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ErrorKind kind = ErrorKind::kUser)
      : std::runtime_error(what), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  // Exit code the CLI uses: 2 for user errors, 1 for internal ones (DESIGN §8).
  int exit_code() const { return kind_ == ErrorKind::kUser ? 2 : 1; }

 private:
  ErrorKind kind_;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
// "a, b, c": the lists of known names an error message offers.
inline std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}
}  // namespace detail

}  // namespace protwin

#define PROTWIN_CHECK(cond, ...)                                                      \
  do {                                                                                \
    if (!(cond)) throw ::protwin::Error(::protwin::detail::concat(__VA_ARGS__));      \
  } while (0)

#define PROTWIN_ASSERT(cond, ...)                                                         \
  do {                                                                                    \
    if (!(cond))                                                                          \
      throw ::protwin::Error(::protwin::detail::concat("internal error at ", __FILE__, ":", \
                                                       __LINE__, ": ", __VA_ARGS__),        \
                             ::protwin::ErrorKind::kInternal);                            \
  } while (0)
