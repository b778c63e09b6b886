#include "jepsen/checker/model.h"

#include "jepsen/checker/models.h"

namespace raftlock::jepsen {

int64_t Interner::id(const Value& value) {
    if (value.is_null()) {
        return 0;
    }
    std::string key = to_string(value);
    auto [it, inserted] = ids_.emplace(key, static_cast<int64_t>(texts_.size()) + 1);
    if (inserted) {
        texts_.push_back(std::move(key));
    }
    return it->second;
}

std::string Interner::text(int64_t id) const {
    if (id <= 0 || id > static_cast<int64_t>(texts_.size())) {
        return "null";
    }
    return texts_[static_cast<size_t>(id - 1)];
}

std::unique_ptr<Model> make_model(std::string_view name) {
    if (name == "register") {
        return std::make_unique<RegisterModel>(false);
    }
    if (name == "kv") {
        return std::make_unique<RegisterModel>(true);
    }
    if (name == "mutex") {
        return std::make_unique<MutexModel>();
    }
    if (name == "sessions") {
        return std::make_unique<SessionsModel>();
    }
    if (name == "sequential") {
        return std::make_unique<SequentialModel>();
    }
    return nullptr;
}

}  // namespace raftlock::jepsen
