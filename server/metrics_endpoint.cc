#include "server/metrics_endpoint.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"

namespace arbiter::server {
namespace {

using Clock = std::chrono::steady_clock;

// A request larger than this is refused: a scrape is one short line and a few headers.
constexpr size_t kMaxRequestBytes = 16 << 10;

bool SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

// A listening socket on host:port, non-blocking; -1 with `error` set when none can be bound.
int Listen(const std::string& host, int port, std::string* error) {
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  if (const int code = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); code != 0) {
    *error = gai_strerror(code);
    return -1;
  }
  int fd = -1;
  for (addrinfo* at = found; at != nullptr && fd < 0; at = at->ai_next) {
    fd = socket(at->ai_family, at->ai_socktype | SOCK_CLOEXEC, at->ai_protocol);
    if (fd < 0) continue;
    const int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, at->ai_addr, at->ai_addrlen) != 0 || listen(fd, 128) != 0 || !SetNonBlocking(fd)) {
      *error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage address = {};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

std::string HttpAnswer(const char* status, const char* content_type, const std::string& body) {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", content_type,
                      "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
}

// One client connection: the request read so far, then the answer being written.
struct Connection {
  int fd = -1;
  Clock::time_point opened;
  std::string request;
  std::string answer;
  size_t written = 0;
  bool answering = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const MetricsEndpointOptions& options, std::shared_ptr<prometheus::Registry> registry) {
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  endpoint->options_ = options;
  endpoint->registry_ = std::move(registry);
  std::string error;
  endpoint->listen_fd_ = Listen(options.host, options.port, &error);
  if (endpoint->listen_fd_ < 0) {
    const std::string shown = absl::StrContains(options.host, ':')
                                  ? absl::StrCat("[", options.host, "]:", options.port)
                                  : absl::StrCat(options.host, ":", options.port);
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", shown, ": ", error));
  }
  endpoint->port_ = BoundPort(endpoint->listen_fd_);
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(endpoint->listen_fd_);
    endpoint->listen_fd_ = -1;
    return absl::InternalError("cannot create the metrics endpoint's wake-up pipe");
  }
  endpoint->wake_read_ = wake[0];
  endpoint->wake_write_ = wake[1];
  endpoint->thread_ = std::thread([raw = endpoint.get()] { raw->Serve(); });
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (thread_.joinable()) {
    const char byte = 0;
    [[maybe_unused]] const ssize_t written = write(wake_write_, &byte, 1);
    thread_.join();
  }
  for (const int fd : {listen_fd_, wake_read_, wake_write_}) {
    if (fd >= 0) close(fd);
  }
}

void MetricsEndpoint::Serve() {
  std::deque<Connection> connections;  // oldest first
  const auto timeout = absl::ToChronoMilliseconds(options_.idle_timeout);
  std::vector<pollfd> polled;
  while (true) {
    polled.clear();
    polled.push_back({wake_read_, POLLIN, 0});
    polled.push_back({listen_fd_, POLLIN, 0});
    for (const Connection& connection : connections) {
      polled.push_back(
          {connection.fd, static_cast<short>(connection.answering ? POLLOUT : POLLIN), 0});
    }
    // Wake at least every 100 ms to close connections past their idle timeout.
    if (poll(polled.data(), polled.size(), 100) < 0 && errno != EINTR) break;
    if (polled[0].revents != 0) break;

    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& connection = connections[i];
      const short events = polled[i + 2].revents;
      if (connection.fd < 0) continue;
      if (events & (POLLERR | POLLHUP | POLLNVAL)) {
        close(connection.fd);
        connection.fd = -1;
        continue;
      }
      if (!connection.answering && (events & POLLIN)) {
        char buffer[4096];
        const ssize_t got = read(connection.fd, buffer, sizeof(buffer));
        if (got <= 0) {
          if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
          close(connection.fd);
          connection.fd = -1;
          continue;
        }
        connection.request.append(buffer, static_cast<size_t>(got));
        const size_t end = connection.request.find("\r\n\r\n");
        if (end == std::string::npos && connection.request.size() <= kMaxRequestBytes) continue;
        const absl::string_view line =
            absl::string_view(connection.request).substr(0, connection.request.find("\r\n"));
        if (end == std::string::npos) {
          connection.answer = HttpAnswer("431 Request Header Fields Too Large", "text/plain",
                                         "request too large\n");
        } else if (absl::StartsWith(line, "GET /metrics ") ||
                   absl::StartsWith(line, "GET /metrics?")) {
          std::ostringstream body;
          prometheus::TextSerializer().Serialize(body, registry_->Collect());
          connection.answer =
              HttpAnswer("200 OK", "text/plain; version=0.0.4; charset=utf-8", body.str());
        } else if (absl::StartsWith(line, "GET ")) {
          connection.answer =
              HttpAnswer("404 Not Found", "text/plain", "not found: try /metrics\n");
        } else {
          connection.answer =
              HttpAnswer("405 Method Not Allowed", "text/plain", "only GET /metrics\n");
        }
        connection.answering = true;
        connection.request.clear();
      }
      if (connection.answering && (events & (POLLOUT | POLLIN))) {
        const ssize_t sent = send(connection.fd, connection.answer.data() + connection.written,
                                  connection.answer.size() - connection.written, MSG_NOSIGNAL);
        if (sent < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (sent <= 0) {
          close(connection.fd);
          connection.fd = -1;
          continue;
        }
        connection.written += static_cast<size_t>(sent);
        if (connection.written == connection.answer.size()) {
          close(connection.fd);
          connection.fd = -1;
        }
      }
    }
    // Idle connections: closed once past the timeout, oldest first.
    for (Connection& connection : connections) {
      if (connection.fd >= 0 && now - connection.opened > timeout) {
        close(connection.fd);
        connection.fd = -1;
      }
    }
    std::deque<Connection> open;
    for (Connection& connection : connections) {
      if (connection.fd >= 0) open.push_back(std::move(connection));
    }
    connections.swap(open);

    if (polled[1].revents & POLLIN) {
      while (true) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (static_cast<int>(connections.size()) >= options_.max_connections) {
          close(connections.front().fd);
          connections.pop_front();
        }
        Connection connection;
        connection.fd = fd;
        connection.opened = Clock::now();
        connections.push_back(std::move(connection));
      }
    }
  }
  for (const Connection& connection : connections) {
    if (connection.fd >= 0) close(connection.fd);
  }
}

}  // namespace arbiter::server
