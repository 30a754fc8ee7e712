#include "tests/integration/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace arbiter::testing {
namespace {

std::vector<char*> Argv(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  return argv;
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int WaitFor(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return DecodeStatus(status);
}

}  // namespace

ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& input) {
  int in[2], out[2], err[2];
  if (pipe(in) != 0 || pipe(out) != 0 || pipe(err) != 0) std::abort();
  const std::vector<char*> args = Argv(argv);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);

  ProcessResult result;
  size_t written = 0;
  int in_fd = in[1];
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  } else {
    fcntl(in_fd, F_SETFL, O_NONBLOCK);
  }
  signal(SIGPIPE, SIG_IGN);  // the child may exit without reading all of its input
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    std::vector<pollfd> fds;
    if (out_open) fds.push_back({out[0], POLLIN, 0});
    if (err_open) fds.push_back({err[0], POLLIN, 0});
    if (in_fd >= 0) fds.push_back({in_fd, POLLOUT, 0});
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (const pollfd& fd : fds) {
      if (fd.revents == 0) continue;
      if (fd.fd == in_fd) {
        const ssize_t n = write(in_fd, input.data() + written, input.size() - written);
        if (n > 0) written += static_cast<size_t>(n);
        if (n < 0 || written == input.size()) {
          close(in_fd);
          in_fd = -1;
        }
        continue;
      }
      char chunk[65536];
      const ssize_t n = read(fd.fd, chunk, sizeof(chunk));
      std::string& sink = fd.fd == out[0] ? result.out : result.err;
      if (n > 0) {
        sink.append(chunk, static_cast<size_t>(n));
      } else {
        (fd.fd == out[0] ? out_open : err_open) = false;
      }
    }
  }
  if (in_fd >= 0) close(in_fd);
  close(out[0]);
  close(err[0]);
  result.exit_code = WaitFor(pid);
  return result;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv,
                                     const std::string& stderr_path) {
  int out[2];
  if (pipe(out) != 0) std::abort();
  int err = -1;
  if (!stderr_path.empty()) {
    err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (err < 0) std::abort();
  }
  const std::vector<char*> args = Argv(argv);
  pid_ = fork();
  if (pid_ == 0) {
    if (err >= 0) dup2(err, 2);
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  if (err >= 0) close(err);
  stdout_fd_ = out[0];
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    WaitFor(pid_);
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

bool BackgroundProcess::ReadLine(std::string* line) {
  while (true) {
    const size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      *line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return true;
    }
    char chunk[4096];
    const ssize_t n = read(stdout_fd_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

int BackgroundProcess::SignalAndWait(int signal_number) {
  Signal(signal_number);
  return Wait();
}

void BackgroundProcess::Signal(int signal_number) {
  if (pid_ > 0) kill(pid_, signal_number);
}

int BackgroundProcess::Wait() {
  if (pid_ <= 0) return -1;
  const int code = WaitFor(pid_);
  pid_ = -1;
  return code;
}

std::string BackgroundProcess::ReadRest() {
  std::string rest = buffer_;
  buffer_.clear();
  char chunk[4096];
  ssize_t n;
  while ((n = read(stdout_fd_, chunk, sizeof(chunk))) > 0)
    rest.append(chunk, static_cast<size_t>(n));
  return rest;
}

}  // namespace arbiter::testing
