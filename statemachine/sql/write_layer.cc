// Engine::WriteLayer: uncommitted rows with their unique values indexed (engine.h).

#include <algorithm>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/sql/engine.h"
#include "statemachine/sql/executor.h"

namespace raftlock::statemachine::sql {

void Engine::WriteLayer::put(const std::string& table,
                             const Table* schema,
                             RowId id,
                             std::optional<Row> image) {
    // A table's unique columns never change while rows of it are uncommitted (there is no ALTER,
    // and DROP TABLE refuses a table with uncommitted writes): the first put decides them.
    auto columns = indexed_columns_.find(table);
    if (columns == indexed_columns_.end()) {
        std::vector<size_t> unique;
        if (schema != nullptr) {
            for (const auto& [column, index] : schema->unique) {
                unique.push_back(column);
            }
        }
        columns = indexed_columns_.emplace(table, std::move(unique)).first;
    }
    auto& rows = rows_[table];
    if (auto old = rows.find(id); old != rows.end() && old->second) {
        index(table, id, *old->second, false);
    }
    if (image) {
        index(table, id, *image, true);
    }
    rows.insert_or_assign(id, std::move(image));
    RL_ASSERT(rows_.size() == indexed_columns_.size());
}

void Engine::WriteLayer::index(const std::string& table, RowId id, const Row& image, bool add) {
    for (size_t column : indexed_columns_.at(table)) {
        RL_ASSERT(column < image.size());
        const Value& v = image[column];
        if (v.is_null) {
            continue;  // NULLs never collide
        }
        auto& keys = unique_[table][column];
        if (add) {
            keys[value_key(v)].insert(id);
            continue;
        }
        const auto ids = keys.find(value_key(v));
        RL_ASSERT_MSG(ids != keys.end() && ids->second.erase(id) == 1,
                      "a written row's old image was indexed");
        if (ids->second.empty()) {
            keys.erase(ids);
        }
    }
}

std::optional<Engine::RowId> Engine::WriteLayer::holder(const std::string& table,
                                                        size_t column,
                                                        const std::string& key,
                                                        std::optional<RowId> below) const {
    const auto rows = rows_.find(table);
    if (rows == rows_.end()) {
        return below;
    }
    const std::vector<size_t>& columns = indexed_columns_.at(table);
    if (std::find(columns.begin(), columns.end(), column) == columns.end()) {
        // Not indexed (its first rows came before the table had a schema here): scan, in id
        // order, the answer the index gives.
        std::optional<RowId> found = below;
        for (const auto& [id, image] : rows->second) {
            if (image && !(*image)[column].is_null && value_key((*image)[column]) == key) {
                found = id;
            } else if (found == id) {
                found.reset();
            }
        }
        return found;
    }
    if (auto t = unique_.find(table); t != unique_.end()) {
        if (auto c = t->second.find(column); c != t->second.end()) {
            if (auto k = c->second.find(key); k != c->second.end() && !k->second.empty()) {
                return *k->second.rbegin();  // the last row written with the value
            }
        }
    }
    if (below && rows->second.contains(*below)) {
        return std::nullopt;  // this layer changed or deleted the row that had it
    }
    return below;
}

std::string Engine::WriteLayer::check_index() const {
    size_t entries = 0;
    for (const auto& [table, rows] : rows_) {
        for (const auto& [id, image] : rows) {
            if (!image) {
                continue;
            }
            for (size_t column : indexed_columns_.at(table)) {
                const Value& v = (*image)[column];
                if (v.is_null) {
                    continue;
                }
                ++entries;
                const auto t = unique_.find(table);
                const bool indexed = t != unique_.end() && t->second.contains(column) &&
                                     t->second.at(column).contains(value_key(v)) &&
                                     t->second.at(column).at(value_key(v)).contains(id);
                if (!indexed) {
                    return fmt::format("sql: written row {} of {} is missing from its index", id,
                                       table);
                }
            }
        }
    }
    size_t indexed = 0;
    for (const auto& [table, columns] : unique_) {
        for (const auto& [column, keys] : columns) {
            for (const auto& [key, ids] : keys) {
                indexed += ids.size();
            }
        }
    }
    return indexed == entries ? "" : "sql: the index of written rows has stale entries";
}

}  // namespace raftlock::statemachine::sql
