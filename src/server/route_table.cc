// SPDX-License-Identifier: Apache-2.0
// RouteTable: checking and finding the application's routes; see route_table.h.
#include "route_table.h"

#include <algorithm>

namespace vmetrics::internal {
namespace {

// RFC 9110 §5.6.2: a method is a token.
bool IsToken(std::string_view s) {
  constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           kSpecials.find(c) != std::string_view::npos;
  });
}

bool IsServersOwn(std::string_view path) {
  return path == "/metrics" || path == "/metrics/" || path == "/health";
}

}  // namespace

Result<RouteTable> RouteTable::Build(const std::vector<HttpRoute>& routes) {
  RouteTable table;
  for (const HttpRoute& route : routes) {
    const std::string name = route.method + " " + route.path;
    auto refuse = [&](std::string_view why) {
      return Status::InvalidArgument("HttpHandlers::routes: " + name + ": " + std::string(why));
    };
    if (!route.handler) return refuse("no handler");
    if (!IsToken(route.method)) return refuse("the method is not an HTTP token");
    if (route.path.empty() || route.path.front() != '/' ||
        route.path.find_first_of("?# \t\r\n") != std::string::npos) {
      return refuse("the path must start with '/' and hold no query, fragment or blank");
    }
    if (IsServersOwn(route.path)) return refuse("the server serves this path itself");
    auto it = std::find_if(table.paths_.begin(), table.paths_.end(),
                           [&](const Path& p) { return p.path == route.path; });
    if (it == table.paths_.end()) {
      table.paths_.push_back(Path{route.path, "", {}});
      it = table.paths_.end() - 1;
    }
    for (const HttpRoute* other : it->routes) {
      if (other->method == route.method) return refuse("given twice");
    }
    if (!it->allow.empty()) it->allow += ", ";
    it->allow += route.method;
    it->routes.push_back(&route);
  }
  return table;
}

RouteTable::Match RouteTable::Find(std::string_view method, std::string_view path) const {
  Match match;
  for (const Path& p : paths_) {
    if (p.path != path) continue;
    for (const HttpRoute* route : p.routes) {
      if (route->method == method) {
        match.route = route;
        return match;
      }
    }
    match.allow = p.allow;
    return match;
  }
  return match;
}

}  // namespace vmetrics::internal
