// arbiter: the command-line client (see `arbiter help`).
#include <iostream>
#include <string>
#include <vector>

#include "clients/cli/cli.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  return arbiter::cli::RunCli(std::vector<std::string>(argv + 1, argv + argc), std::cout,
                              std::cerr);
}
