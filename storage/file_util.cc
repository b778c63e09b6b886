#include "storage/file_util.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fatal.h"

namespace raftlock::storage {
namespace {

// Retries interrupted and short writes; a write loop is bounded by the bytes left.
void write_all(int fd, std::string_view bytes, const std::string& path) {
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            fatal_errno(fmt::format("write {}", path), n < 0 ? errno : EIO);
        }
        done += static_cast<size_t>(n);
    }
}

StorageError io_error(std::string_view what, const std::string& path, int errno_value) {
    return StorageError{StorageErrorCode::kIo,
                        fmt::format("{} {}: {}", what, path, std::strerror(errno_value))};
}

}  // namespace

bool is_directory(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::optional<StorageError> ensure_directory(const std::string& path) {
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
        return io_error("mkdir", path, errno);
    }
    return std::nullopt;
}

void fsync_directory(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        fatal_errno(fmt::format("open directory {}", dir), errno);
    }
    if (::fsync(fd) != 0) {
        fatal_errno(fmt::format("fsync directory {}", dir), errno);
    }
    ::close(fd);
}

void write_file_durably(const std::string& dir, const std::string& name, std::string_view bytes) {
    const std::string path = dir + "/" + name;
    const std::string tmp_path = path + ".tmp";
    const int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fatal_errno(fmt::format("create {}", tmp_path), errno);
    }
    write_all(fd, bytes, tmp_path);
    if (::fsync(fd) != 0) {
        fatal_errno(fmt::format("fsync {}", tmp_path), errno);
    }
    if (::close(fd) != 0) {
        fatal_errno(fmt::format("close {}", tmp_path), errno);
    }
    if (::rename(tmp_path.c_str(), path.c_str()) != 0) {
        fatal_errno(fmt::format("rename {} to {}", tmp_path, path), errno);
    }
    fsync_directory(dir);
}

void remove_file_durably(const std::string& dir, const std::string& name) {
    const std::string path = dir + "/" + name;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        fatal_errno(fmt::format("unlink {}", path), errno);
    }
    fsync_directory(dir);
}

Result<std::string, StorageError> read_whole_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return io_error("open", path, errno);
    }
    std::string out;
    char buffer[64 * 1024];
    // Ends at end of file: bounded by the file's size.
    while (true) {
        const ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            const int saved = errno;
            ::close(fd);
            return io_error("read", path, saved);
        }
        if (n == 0) {
            break;
        }
        out.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
}

void pwrite_all(int fd, std::string_view bytes, uint64_t offset, const std::string& path) {
    // Bounded by the bytes left: every pass writes at least one or panics.
    for (size_t done = 0; done < bytes.size();) {
        const ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done,
                                   static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            fatal_errno(fmt::format("write {} at offset {}", path, offset + done),
                        n < 0 ? errno : EIO);
        }
        done += static_cast<size_t>(n);
    }
}

void datasync_or_die(int fd, const std::string& path) {
    if (::fdatasync(fd) != 0) {
        fatal_errno(fmt::format("fdatasync {}", path), errno);
    }
}

std::optional<StorageError> pread_exactly(
    int fd, char* out, size_t size, uint64_t offset, const std::string& path) {
    // Bounded by the bytes left: every pass reads at least one or returns.
    for (size_t done = 0; done < size;) {
        const ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return StorageError{StorageErrorCode::kIo,
                                fmt::format("read {} at offset {}: {}", path, offset + done,
                                            n < 0 ? std::strerror(errno) : "end of file")};
        }
        done += static_cast<size_t>(n);
    }
    return std::nullopt;
}

Result<std::vector<std::string>, StorageError> list_directory(const std::string& dir) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
        return io_error("open directory", dir, errno);
    }
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..") {
            names.push_back(name);
        }
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace raftlock::storage
