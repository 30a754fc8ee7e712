#include "tests/support/temp_dir.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <system_error>

namespace arbiter::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/arbiter-test-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    std::cerr << "cannot make a temporary directory from " << pattern << "\n";
    std::abort();
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace arbiter::testing
