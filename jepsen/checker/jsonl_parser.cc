// The only file that includes nlohmann/json: it is heavy to compile.
#include <optional>

#include <nlohmann/json.hpp>

#include "jepsen/checker/parsers.h"

namespace raftlock::jepsen {

namespace {

using Json = nlohmann::json;

std::optional<Value> to_value(const Json& json, int depth) {
    if (depth > kValueDepthMax) {
        return std::nullopt;
    }
    switch (json.type()) {
        case Json::value_t::null:
            return Value::null();
        case Json::value_t::boolean:
            return Value::boolean(json.get<bool>());
        case Json::value_t::number_integer:
            return Value::integer(json.get<int64_t>());
        case Json::value_t::number_unsigned:
            if (json.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
                return std::nullopt;
            }
            return Value::integer(static_cast<int64_t>(json.get<uint64_t>()));
        case Json::value_t::string:
            return Value::string(json.get<std::string>());
        case Json::value_t::array: {
            std::vector<Value> items;
            items.reserve(json.size());
            for (const Json& item : json) {
                std::optional<Value> v = to_value(item, depth + 1);
                if (!v) {
                    return std::nullopt;
                }
                items.push_back(std::move(*v));
            }
            return Value::list(std::move(items));
        }
        default:
            return std::nullopt;  // objects and floats have no meaning in any model
    }
}

std::optional<EventType> event_type(const std::string& name) {
    if (name == "invoke") {
        return EventType::kInvoke;
    }
    if (name == "ok") {
        return EventType::kOk;
    }
    if (name == "fail") {
        return EventType::kFail;
    }
    if (name == "info") {
        return EventType::kInfo;
    }
    if (name == "event") {
        return EventType::kWatch;
    }
    return std::nullopt;
}

bool is_int(const Json& json) {
    return json.is_number_integer() || json.is_number_unsigned();
}

// Fills `event` from one parsed record; returns an error message, empty when the record is good.
std::string decode(const Json& json, Event& event) {
    if (!json.is_object()) {
        return "a record must be a JSON object";
    }
    auto type = json.find("type");
    if (type == json.end() || !type->is_string() || !event_type(type->get<std::string>())) {
        return "\"type\" must be one of invoke, ok, fail, info, event";
    }
    event.type = *event_type(type->get<std::string>());
    auto process = json.find("process");
    if (process == json.end() || !is_int(*process)) {
        return "\"process\" must be an integer (or \"nemesis\")";
    }
    event.process = process->get<int64_t>();
    auto f = json.find("f");
    if (f == json.end() || !f->is_string() || f->get<std::string>().empty()) {
        return "\"f\" must be a non-empty string";
    }
    event.f = f->get<std::string>();
    if (auto key = json.find("key"); key != json.end()) {
        if (key->is_string()) {
            event.key = key->get<std::string>();
        } else if (is_int(*key)) {
            event.key = std::to_string(key->get<int64_t>());
        } else {
            return "\"key\" must be a string or an integer";
        }
    }
    if (auto time = json.find("time_ns"); time != json.end()) {
        if (!is_int(*time)) {
            return "\"time_ns\" must be an integer";
        }
        event.time_ns = time->get<int64_t>();
    }
    if (auto error = json.find("error"); error != json.end() && !error->is_null()) {
        if (!error->is_string()) {
            return "\"error\" must be a string";
        }
        event.error = error->get<std::string>();
    }
    if (auto value = json.find("value"); value != json.end()) {
        std::optional<Value> v = to_value(*value, 0);
        if (!v) {
            return "\"value\" must be null, a boolean, an integer, a string or a list of those "
                   "(nested at most 8 deep)";
        }
        event.value = std::move(*v);
    }
    return {};
}

bool is_nemesis(const Json& json) {
    auto process = json.find("process");
    return process != json.end() && process->is_string() &&
           process->get<std::string>() == "nemesis";
}

struct Order {
    int64_t last_index = -1;
    int64_t last_time_ns = INT64_MIN;
};

// The file promises real-time order; a record that breaks it means a broken recorder.
std::string check_order(const Json& json, const Event& event, Order& order) {
    if (auto index = json.find("index"); index != json.end()) {
        if (!is_int(*index) || index->get<int64_t>() <= order.last_index) {
            return "\"index\" must be an integer greater than the previous record's";
        }
        order.last_index = index->get<int64_t>();
    }
    if (json.contains("time_ns")) {
        if (event.time_ns < order.last_time_ns) {
            return "\"time_ns\" goes backwards (records must be in real-time order)";
        }
        order.last_time_ns = event.time_ns;
    }
    return {};
}

}  // namespace

Result<History, InputError> parse_jsonl(std::string_view text, std::string source) {
    Order order;
    return parse_records(text, std::move(source),
                         [&](std::string_view line, Event& event, bool* skip) -> std::string {
                             Json json = Json::parse(line, nullptr, /*allow_exceptions=*/false);
                             if (json.is_discarded()) {
                                 return "not valid JSON";
                             }
                             if (is_nemesis(json)) {
                                 *skip = true;
                                 return "";
                             }
                             std::string message = decode(json, event);
                             if (message.empty()) {
                                 message = check_order(json, event, order);
                             }
                             return message;
                         });
}

}  // namespace raftlock::jepsen
