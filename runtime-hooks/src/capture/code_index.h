// CodeIndex: the JIT'd code ranges the stack walker knows (stack_walker.cpp), ordered by start for the
// lookup of an address, with two ordered secondary indexes, by method and by domain, so that a freed
// method's ranges (Mono's method_free: every dynamic method, compiled Expression and compiled Regex
// whose code is released) and an unloaded domain's are found in logarithmic time, not by a scan of
// the whole table (which made method_free 11% of a GUI's start: issue 22).
// Plain data and logic, no Mono and no lock: the caller holds its mutex. Entries are the caller's
// (never freed here: a walk may still hold one); `gone` is told of every entry removed.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <utility>

namespace mlpd::hooks::walker {

// Entry: any type with uint64_t start, end (end > start) and pointer members method and domain.
template <class Entry>
class CodeIndex {
 public:
  // The entry whose range holds `ip`, or nullptr.
  const Entry* find(uint64_t ip) const {
    auto it = by_start_.upper_bound(ip);
    if (it == by_start_.begin()) return nullptr;
    --it;
    return ip < it->second->end ? it->second : nullptr;
  }

  // Adds `e`. The entries it overlaps are removed first (their code memory was reused).
  template <class Gone>
  void add(const Entry* e, Gone&& gone) {
    auto it = by_start_.lower_bound(e->start);
    if (it != by_start_.begin() && std::prev(it)->second->end > e->start) --it;
    while (it != by_start_.end() && it->first < e->end) {
      const Entry* old = it->second;
      it = by_start_.erase(it);
      unlink(old);
      gone(old);
    }
    by_start_.emplace(e->start, e);
    by_method_.emplace(key(e->method), e->start);
    by_domain_.emplace(key(e->domain), e->start);
  }

  // Removes every range of `method` (a freed method); returns how many.
  template <class Gone>
  size_t remove_method(const void* method, Gone&& gone) {
    return remove_by(by_method_, key(method), std::forward<Gone>(gone));
  }
  // Removes every range of `domain` (an unloaded domain); returns how many.
  template <class Gone>
  size_t remove_domain(const void* domain, Gone&& gone) {
    return remove_by(by_domain_, key(domain), std::forward<Gone>(gone));
  }

  size_t size() const { return by_start_.size(); }

 private:
  using Index = std::set<std::pair<uintptr_t, uint64_t>>;  // (method or domain, start)

  template <class P>
  static uintptr_t key(P* p) {
    return reinterpret_cast<uintptr_t>(p);
  }

  // Drops an entry already removed from by_start_ from the secondary indexes.
  void unlink(const Entry* e) {
    by_method_.erase({key(e->method), e->start});
    by_domain_.erase({key(e->domain), e->start});
  }

  template <class Gone>
  size_t remove_by(Index& index, uintptr_t owner, Gone&& gone) {
    size_t n = 0;
    auto it = index.lower_bound({owner, 0});
    while (it != index.end() && it->first == owner) {
      const uint64_t start = it->second;
      it = index.erase(it);
      auto s = by_start_.find(start);
      if (s == by_start_.end()) continue;  // not expected: the indexes are kept in step
      const Entry* e = s->second;
      by_start_.erase(s);
      // From the other secondary index (from `index` itself it is gone already: `it` stays valid).
      by_method_.erase({key(e->method), e->start});
      by_domain_.erase({key(e->domain), e->start});
      gone(e);
      ++n;
    }
    return n;
  }

  std::map<uint64_t, const Entry*> by_start_;
  Index by_method_, by_domain_;
};

}  // namespace mlpd::hooks::walker
