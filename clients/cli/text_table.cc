#include "clients/cli/text_table.h"

#include <algorithm>
#include <utility>

namespace arbiter::cli {
namespace {

void AppendLine(const std::vector<std::string>& cells, const std::vector<size_t>& widths,
                const std::vector<TextTable::Column>& columns, std::string* out) {
  std::string line;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) line.append("  ");
    const std::string& cell = cells[i];
    const size_t padding = widths[i] - cell.size();
    if (columns[i].align == TextTable::kRight) line.append(padding, ' ');
    line.append(cell);
    if (columns[i].align == TextTable::kLeft) line.append(padding, ' ');
  }
  line.erase(line.find_last_not_of(' ') + 1);
  out->append(line);
  out->push_back('\n');
}

}  // namespace

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::Render() const {
  std::vector<size_t> widths(columns_.size());
  std::vector<std::string> titles;
  for (size_t i = 0; i < columns_.size(); ++i) {
    titles.push_back(columns_[i].title);
    widths[i] = columns_[i].title.size();
    for (const std::vector<std::string>& row : rows_)
      widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  AppendLine(titles, widths, columns_, &out);
  for (const std::vector<std::string>& row : rows_) AppendLine(row, widths, columns_, &out);
  return out;
}

}  // namespace arbiter::cli
