// What NCCL itself can print: every WARN format string of its sources, with the source file and
// the *path* that file is on (IB verbs, sockets, bootstrap, CUDA, topology, shared memory, ...),
// generated from NCCL's release tags by tools/nccl-catalogue into agent/classify/catalogue/ and
// built into the binary. A WARN line that no rule names still has a path, and so a class and a
// generic cause, when it matches an entry: by the `file.cc:LINE` NCCL prints before WARN, or, for
// the releases that print none, by its message against the format strings.
//
// Matching a message against a printf format is literal text with typed holes (%d digits, %s any
// text, %p a pointer, ...), tried only on the entries whose leading literal the message starts
// with. Immutable after construction; safe to share between threads.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "core/catalogue.h"
#include "core/model.h"

namespace nccl_triage {

// A path of NCCL's code and what a failure there means when no rule names it.
struct MessagePath {
  std::string_view name;  // ib_verbs, net_ib, socket, ...
  FaultClass verdict;     // which path failed (DESIGN "two meanings of class")
  CauseId cause;          // the generic cause of a failure on this path
  std::string_view what;  // "the IB verbs layer", for reasons
};
std::span<const MessagePath> MessagePaths();
const MessagePath* FindMessagePath(std::string_view name);

struct CatalogueMessage {
  std::string level;   // WARN | INFO
  std::string format;  // printf form, as in the source
  std::string file;    // relative to NCCL's src/
  std::string path;    // a MessagePath name
  std::string first;   // first and last NCCL version that print it ("2.12.12")
  std::string last;
};

// Whether `text` is what `format` prints for some arguments.
bool FormatMatches(std::string_view format, std::string_view text);

class MessageCatalogue {
 public:
  // The TSV of tools/nccl-catalogue (a header row names the columns; `#` lines are comments).
  // InvalidArgument naming the line when a row is malformed or names an unknown path.
  static StatusOr<std::shared_ptr<const MessageCatalogue>> Parse(std::string_view tsv);
  // The catalogue built into the binary; empty when the build had none (or it does not parse:
  // BuiltinStatus says why, and a test holds it to OK).
  static std::shared_ptr<const MessageCatalogue> Builtin();
  static Status BuiltinStatus();

  std::span<const CatalogueMessage> messages() const { return messages_; }
  // The WARN entry a message is (the one with the longest literal text when several match), or
  // nullptr.
  const CatalogueMessage* MatchWarn(std::string_view message) const;
  // The same for text that is not an NCCL debug line (a framework's quote of NCCL's last error,
  // a paste without the `host:pid:tid [dev] NCCL WARN` prefix): only formats that start with
  // literal text, so that a format opening with a conversion (`%s: %s`) never names prose.
  // rdma-core's messages (libibverbs, the mlx5 provider) are never matched: they are always plain
  // text of their own, not NCCL's lines without a prefix.
  const CatalogueMessage* MatchQuotedWarn(std::string_view message) const;
  // An INFO entry that a message pasted without its prefix is (`Channel 00/0 : 1[1] -> 0[0] via
  // SHM/direct/direct`, `Connected all rings`), by formats that start with literal text; not
  // rdma-core's, as above.
  const CatalogueMessage* MatchBareInfo(std::string_view message) const;
  // The path of a source file as NCCL prints it before WARN ("transport/net_ib.cc:1206",
  // "net_ib.cc:1206"), or nullptr when the catalogue has no WARN from that file or its WARNs
  // sit on several paths.
  const MessagePath* PathOfFile(std::string_view file_and_line) const;

 private:
  MessageCatalogue() = default;
  std::vector<CatalogueMessage> messages_;
  // Heterogeneous lookup: keys are looked up by string_view, without a copy.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <typename V>
  using Map = std::unordered_map<std::string, V, Hash, std::equal_to<>>;
  // WARN and INFO formats by their leading literal (capped), bucketed by the literal's first
  // kGateBytes (the whole literal when shorter): a message is compared only with the literals of
  // its own bucket, by memcmp, longest first; a message whose start opens no bucket (most text
  // lines of a job) costs one or a few lookups.
  struct PrefixIndex {
    struct Key {
      std::string text;
      std::vector<size_t> entries;  // indices into messages_
    };
    Map<std::vector<Key>> buckets;    // each bucket longest literal first
    std::vector<size_t> short_lengths;  // lengths of literals under kGateBytes, longest first
  };
  const CatalogueMessage* MatchIndexed(const PrefixIndex& index, std::string_view message,
                                       bool open_start) const;
  PrefixIndex warn_;
  PrefixIndex info_;
  std::vector<size_t> open_start_;  // formats that start with a conversion
  // A source file's path when all its WARNs share one: by its path under src/, by base name.
  Map<const MessagePath*> file_paths_;
  Map<const MessagePath*> base_paths_;
  Map<std::string> base_files_;  // base name -> its one file
};

}  // namespace nccl_triage
