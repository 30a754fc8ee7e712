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

void Close(Connection& connection) {
  close(connection.fd);
  connection.fd = -1;
}

// The answer to `request`, whose header is complete when `complete`, else over the size limit.
std::string AnswerRequest(const std::string& request, bool complete,
                          const prometheus::Registry& registry) {
  const absl::string_view line = absl::string_view(request).substr(0, request.find("\r\n"));
  if (!complete) {
    return HttpAnswer("431 Request Header Fields Too Large", "text/plain", "request too large\n");
  }
  if (absl::StartsWith(line, "GET /metrics ") || absl::StartsWith(line, "GET /metrics?")) {
    std::ostringstream body;
    prometheus::TextSerializer().Serialize(body, registry.Collect());
    return HttpAnswer("200 OK", "text/plain; version=0.0.4; charset=utf-8", body.str());
  }
  if (absl::StartsWith(line, "GET ")) {
    return HttpAnswer("404 Not Found", "text/plain", "not found: try /metrics\n");
  }
  return HttpAnswer("405 Method Not Allowed", "text/plain", "only GET /metrics\n");
}

// Reads what `connection` has sent; once its header is complete (or too large), the answer is
// ready and `connection` is answering. Closes it on an error or end of input.
void ReadRequest(Connection& connection, const prometheus::Registry& registry) {
  char buffer[4096];
  const ssize_t got = read(connection.fd, buffer, sizeof(buffer));
  if (got <= 0) {
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
    Close(connection);
    return;
  }
  connection.request.append(buffer, static_cast<size_t>(got));
  const size_t end = connection.request.find("\r\n\r\n");
  if (end == std::string::npos && connection.request.size() <= kMaxRequestBytes) return;
  connection.answer = AnswerRequest(connection.request, end != std::string::npos, registry);
  connection.answering = true;
  connection.request.clear();
}

// Sends what `connection` can take of its answer; closes it once all is sent, or on an error.
void WriteAnswer(Connection& connection) {
  const ssize_t sent = send(connection.fd, connection.answer.data() + connection.written,
                            connection.answer.size() - connection.written, MSG_NOSIGNAL);
  if (sent < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (sent <= 0) {
    Close(connection);
    return;
  }
  connection.written += static_cast<size_t>(sent);
  if (connection.written == connection.answer.size()) Close(connection);
}

// Moves `connection` on by what poll reported in `events`.
void Advance(Connection& connection, short events, const prometheus::Registry& registry) {
  if (connection.fd < 0) return;
  if (events & (POLLERR | POLLHUP | POLLNVAL)) {
    Close(connection);
    return;
  }
  if (!connection.answering && (events & POLLIN)) ReadRequest(connection, registry);
  if (connection.fd >= 0 && connection.answering && (events & (POLLOUT | POLLIN))) {
    WriteAnswer(connection);
  }
}

// Closes the connections idle past `timeout` at `now`, and drops the closed ones.
void DropClosed(std::deque<Connection>& connections, Clock::time_point now,
                Clock::duration timeout) {
  for (Connection& connection : connections) {
    if (connection.fd >= 0 && now - connection.opened > timeout) Close(connection);
  }
  std::deque<Connection> open;
  for (Connection& connection : connections) {
    if (connection.fd >= 0) open.push_back(std::move(connection));
  }
  connections.swap(open);
}

// Accepts every connection waiting on `listen_fd`; past `max_connections`, the oldest is closed.
void AcceptAll(int listen_fd, int max_connections, std::deque<Connection>& connections) {
  while (true) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) break;
    if (static_cast<int>(connections.size()) >= max_connections) {
      close(connections.front().fd);
      connections.pop_front();
    }
    Connection connection;
    connection.fd = fd;
    connection.opened = Clock::now();
    connections.push_back(std::move(connection));
  }
}

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
      Advance(connections[i], polled[i + 2].revents, *registry_);
    }
    // Idle connections: closed once past the timeout, oldest first.
    DropClosed(connections, now, timeout);
    if (polled[1].revents & POLLIN) {
      AcceptAll(listen_fd_, options_.max_connections, connections);
    }
  }
  for (const Connection& connection : connections) {
    if (connection.fd >= 0) close(connection.fd);
  }
}

}  // namespace arbiter::server
