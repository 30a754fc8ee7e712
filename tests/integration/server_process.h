// arbiter-server as a child process, for tests that must see it die, stop or grow: its address
// and metrics port read from its first lines, and its resident memory and open descriptors read
// from /proc. Header-only: ARBITER_SERVER_PATH is defined per test binary.
#pragma once

#include <dirent.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/subprocess.h"

namespace arbiter::testing {

// The whole file at `path` ("" when it cannot be read).
inline std::string ReadWhole(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// arbiter-server started with `flags` on 127.0.0.1:0 (after `flags`, so they may not name
// another host), its stderr written to `stderr_path`. `prefix` runs before it, e.g.
// {"/usr/bin/prlimit", "--data=1073741824", "--"} to cap its memory.
class ServerProcess {
 public:
  ServerProcess(const std::vector<std::string>& flags, const std::string& stderr_path,
                const std::vector<std::string>& prefix = {})
      : process_(Command(flags, prefix), stderr_path) {
    std::string line;
    while (process_.ReadLine(&line)) {
      if (line.rfind("listening on ", 0) == 0) {
        address_ = line.substr(std::string("listening on ").size());
      } else if (line.rfind("metrics on ", 0) == 0) {
        metrics_port_ = std::stoi(line.substr(line.rfind(':') + 1));
      }
      if (!address_.empty() && (metrics_port_ > 0 || !metrics_)) break;
    }
  }

  BackgroundProcess& process() { return process_; }
  const std::string& address() const { return address_; }
  int metrics_port() const { return metrics_port_; }

  // Whether the process still runs (it is our child: a zombie counts as gone).
  bool Alive() const {
    const std::string state = Status("State:");
    return !state.empty() && state[0] != 'Z' && state[0] != 'X';
  }
  // VmRSS in bytes; -1 when the process is gone.
  int64_t ResidentBytes() const {
    const std::string rss = Status("VmRSS:");
    if (rss.empty()) return -1;
    return std::stoll(rss) * 1024;
  }
  // Open file descriptors; -1 when the process is gone.
  int OpenDescriptors() const {
    DIR* dir = opendir(("/proc/" + std::to_string(process_.pid()) + "/fd").c_str());
    if (dir == nullptr) return -1;
    int count = 0;
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
    return count - 2;  // "." and ".."
  }

 private:
  std::vector<std::string> Command(const std::vector<std::string>& flags,
                                   const std::vector<std::string>& prefix) {
    std::vector<std::string> argv = prefix;
    argv.push_back(ARBITER_SERVER_PATH);
    argv.insert(argv.end(), flags.begin(), flags.end());
    bool host_given = false;
    for (const std::string& flag : flags) host_given = host_given || flag == "--host";
    if (!host_given) argv.insert(argv.end(), {"--host", "127.0.0.1"});
    argv.insert(argv.end(), {"--port", "0"});
    for (size_t i = 0; i + 1 < flags.size(); ++i) {
      if (flags[i] == "--metrics-port" && flags[i + 1] == "-1") metrics_ = false;
    }
    return argv;
  }

  // The value after `key` in /proc/PID/status, "" when absent.
  std::string Status(const std::string& key) const {
    std::ifstream in("/proc/" + std::to_string(process_.pid()) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(key, 0) == 0) {
        const size_t start = line.find_first_not_of(" \t", key.size());
        return start == std::string::npos ? "" : line.substr(start);
      }
    }
    return "";
  }

  bool metrics_ = true;
  BackgroundProcess process_;
  std::string address_;
  int metrics_port_ = -1;
};

}  // namespace arbiter::testing
