// SPDX-License-Identifier: Apache-2.0
// File: route_table.h (internal to src/server)
//
// RouteTable: the application's routes (HttpHandlers::routes), checked once when the server
// starts and indexed by path, so that each request costs one look-up: the route its method and
// path name, or, for a path some route serves with other methods, the Allow header of its 405.
//
// Thread safety: immutable after Build; Find may be called from any number of threads.
//
// Example:
//   std::vector<HttpRoute> routes = {{.method = "POST", .path = "/submit", .handler = Handle}};
//   Result<RouteTable> table = RouteTable::Build(routes);
//   ASSERT_TRUE(table.ok());
//   EXPECT_EQ(table->Find("GET", "/submit").allow, "POST");
#ifndef VMETRICS_SERVER_ROUTE_TABLE_H_
#define VMETRICS_SERVER_ROUTE_TABLE_H_

#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/http_server.h"
#include "vmetrics/status.h"

namespace vmetrics::internal {

class RouteTable {
 public:
  RouteTable() = default;

  // Build
  //
  // Indexes `routes`, which must outlive the table (it keeps their addresses). Fails
  // (kInvalidArgument, naming the route) for a route without a handler, a method that is not
  // an HTTP token, a path that does not start with '/' or holds '?', '#' or a blank, a path
  // the server serves itself (/metrics, /metrics/, /health), or a (method, path) given twice.
  static Result<RouteTable> Build(const std::vector<HttpRoute>& routes);

  struct Match {
    const HttpRoute* route = nullptr;  // the route for this method and path, if any
    // Without a route: the methods the path has, as an Allow header ("POST", "GET, POST");
    // "" when no route has this path (404). Points into the table.
    std::string_view allow;
  };

  // The route `method` and `path` (without its query string) name. Methods are compared
  // case-sensitively, as HTTP defines them.
  Match Find(std::string_view method, std::string_view path) const;

  bool empty() const { return paths_.empty(); }

 private:
  struct Path {
    std::string path;
    std::string allow;  // methods joined with ", ", in registration order
    std::vector<const HttpRoute*> routes;
  };
  // A handful of paths: a linear scan beats hashing, and keeps registration order.
  std::vector<Path> paths_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_ROUTE_TABLE_H_
