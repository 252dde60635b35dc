// RootReader: the only code in nccl-triage that reads files of a node, all under one root.
//
// Every path it takes is relative to the root given to the constructor ("/" on a host, a fixture
// tree in tests, the --root flag of the CLI), so tests and production run the same code. Under a
// root other than "/" paths resolve as in a chroot (openat2 RESOLVE_IN_ROOT): a symbolic link or
// ".." never leads out of the root, so a link planted in the tree cannot reach the host's files.
// Reads are
// bounded in size and never throw: a failure comes back as a short reason ("missing",
// "unreadable: EACCES"). Each file and link read is counted in files_read(), which the snapshot
// keeps so that a test can assert that nothing is read twice. Not thread-safe: one reader per
// gathering, owned by the gatherer.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nccl_triage {

// The outcome of reading one file or link: the text, or why there is none.
struct ReadResult {
  std::optional<std::string> text;
  std::string error;  // "missing", "unreadable: EACCES", ...; empty when text is set
  bool ok() const { return text.has_value(); }
};

// A directory listing: entry names sorted in natural order ("mlx5_2" before "mlx5_10").
struct ListResult {
  std::vector<std::string> names;
  std::string error;  // "missing", "unreadable: EACCES", "not a directory"
  bool exists = false;
};

class RootReader {
 public:
  // Files larger than this are cut (cpuinfo of a 256-thread host is about 400 KiB).
  static constexpr size_t kMaxFileBytes = 8u << 20;

  explicit RootReader(std::string root);

  const std::string& root() const { return root_; }
  // The absolute path of `rel` under the root.
  std::string PathOf(std::string_view rel) const;

  // Reads a whole file. Counted in files_read().
  ReadResult ReadFile(std::string_view rel);
  // Reads the target of a symbolic link. Counted in files_read() unless `count` is false (the
  // proc/<pid>/fd scan reads thousands of links on a busy host and would swamp the record).
  ReadResult ReadLink(std::string_view rel, bool count = true);
  ListResult List(std::string_view rel) const;
  // Calls fn(i, target) for every symbolic link in each directory subdirs[i] under `base`
  // (proc/<pid>/fd for every pid): the base is opened once, each directory relative to it, and
  // each link costs one readlinkat, with no sorting — the fd scan of a node with thousands of
  // processes. Not counted in files_read(). Directories that vanish meanwhile are skipped.
  // Returns false when the base cannot be opened.
  bool ForEachLink(std::string_view base, const std::vector<std::string>& subdirs,
                   const std::function<void(size_t, std::string_view)>& fn) const;
  bool Exists(std::string_view rel) const;     // lstat: a dangling link exists
  bool IsDirectory(std::string_view rel) const;  // stat: follows links (within the root)

  const std::map<std::string, int>& files_read() const { return files_read_; }
  // True once a file or link was read or a listing named something: a root where this stays
  // false after a whole gathering holds nothing of a node (an empty or wrong --root).
  bool found_anything() const { return found_anything_; }
  std::map<std::string, int> TakeFilesRead() { return std::move(files_read_); }

 private:
  // open(2) of `rel` under the root (O_CLOEXEC added); -1 with errno set.
  int Open(std::string_view rel, int flags) const;

  std::string root_;
  std::map<std::string, int> files_read_;
  mutable bool found_anything_ = false;  // a fact about the reads, not the reader's state
};

// The errno as its symbolic name ("EACCES"); unknown values as "errno N".
std::string ErrnoName(int err);

// Natural order: digit runs compare by value ("uverbs2" < "uverbs10").
bool NaturalLess(std::string_view a, std::string_view b);

}  // namespace nccl_triage
