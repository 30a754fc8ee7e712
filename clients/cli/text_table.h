// A plain-text table with aligned columns, for the CLI's table format.
//
//   TextTable table({{"QUEUE"}, {"FAIR SHARE", TextTable::kRight}});
//   table.AddRow({"team-a", "4"});
//   std::cout << table.Render();
//
// Columns are separated by two spaces; trailing spaces are trimmed. Widths count bytes, which is
// right for the ASCII that arbiter prints and for names that are ASCII.
#pragma once

#include <string>
#include <vector>

namespace arbiter::cli {

class TextTable {
 public:
  enum Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = kLeft;
  };

  explicit TextTable(std::vector<Column> columns);

  // Adds a row; missing trailing cells are empty, extra cells are dropped.
  void AddRow(std::vector<std::string> cells);

  int rows() const { return static_cast<int>(rows_.size()); }

  // The header line, then one line per row, each ending in '\n'.
  std::string Render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace arbiter::cli
