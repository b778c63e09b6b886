#include "jepsen/checker/value.h"

namespace raftlock::jepsen {

bool Value::is_int_list(size_t n) const {
    if (kind != Kind::kList || items.size() != n) {
        return false;
    }
    for (const Value& item : items) {
        if (!item.is_int()) {
            return false;
        }
    }
    return true;
}

namespace {

void append_quoted(std::string& out, const std::string& text) {
    out += '"';
    for (char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
        }
        out += c;
    }
    out += '"';
}

void append_value(std::string& out, const Value& value) {
    switch (value.kind) {
        case Value::Kind::kNull:
            out += "null";
            return;
        case Value::Kind::kBool:
            out += value.int_value != 0 ? "true" : "false";
            return;
        case Value::Kind::kInt:
            out += std::to_string(value.int_value);
            return;
        case Value::Kind::kString:
            append_quoted(out, value.text);
            return;
        case Value::Kind::kList:
            out += '[';
            for (size_t i = 0; i < value.items.size(); ++i) {
                if (i > 0) {
                    out += ',';
                }
                append_value(out, value.items[i]);
            }
            out += ']';
            return;
    }
}

}  // namespace

std::string to_string(const Value& value) {
    std::string out;
    append_value(out, value);
    return out;
}

}  // namespace raftlock::jepsen
