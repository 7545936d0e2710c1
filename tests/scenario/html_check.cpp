#include "scenario/html_check.h"

#include <sys/wait.h>

#include <cstdlib>
#include <vector>

#include "scenario/run_gcsim.h"

namespace gcsim::test {

namespace fs = std::filesystem;

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

namespace {

// The HTML void elements, which need no closing tag.
bool is_void(const std::string& name) {
  for (const char* v : {"meta", "br", "hr", "img", "link", "input"}) {
    if (name == v) return true;
  }
  return false;
}

std::string entity_problem(const std::string& s, size_t at) {
  for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"}) {
    if (s.compare(at, std::string(e).size(), e) == 0) return "";
  }
  return "unknown entity at byte " + std::to_string(at);
}

}  // namespace

std::string html_problem(const std::string& h) {
  std::vector<std::string> open;
  size_t i = 0;
  if (h.rfind("<!DOCTYPE html>", 0) != 0) return "no <!DOCTYPE html> at the start";
  i = h.find('>') + 1;
  while (i < h.size()) {
    if (h[i] == '&') {
      if (auto p = entity_problem(h, i); !p.empty()) return p;
      ++i;
      continue;
    }
    if (h[i] != '<') {
      ++i;
      continue;
    }
    const size_t end = h.find('>', i);
    if (end == std::string::npos) return "unclosed tag at byte " + std::to_string(i);
    std::string tag = h.substr(i + 1, end - i - 1);
    if (tag.rfind("!--", 0) == 0) {
      const size_t close = h.find("-->", i);
      if (close == std::string::npos) return "unclosed comment at byte " + std::to_string(i);
      i = close + 3;
      continue;
    }
    if (tag.find('<') != std::string::npos) return "'<' inside a tag at byte " + std::to_string(i);
    const bool closing = !tag.empty() && tag[0] == '/';
    const bool self_closing = !tag.empty() && tag.back() == '/';
    size_t name_end = tag.find_first_of(" \n\t/", closing ? 1 : 0);
    if (name_end == std::string::npos) name_end = tag.size();
    const std::string name = tag.substr(closing ? 1 : 0, name_end - (closing ? 1 : 0));
    if (name.empty()) return "empty tag name at byte " + std::to_string(i);
    // Attributes: name="value" pairs with escaped values.
    const std::string attrs = closing ? "" : tag.substr(name_end, tag.size() - name_end - (self_closing ? 1 : 0));
    for (size_t a = 0; a < attrs.size();) {
      if (attrs[a] == ' ' || attrs[a] == '\n') {
        ++a;
        continue;
      }
      const size_t eq = attrs.find('=', a);
      if (eq == std::string::npos || eq + 1 >= attrs.size() || attrs[eq + 1] != '"') {
        return "unquoted attribute in <" + name + "> at byte " + std::to_string(i);
      }
      const size_t q = attrs.find('"', eq + 2);
      if (q == std::string::npos) return "unterminated attribute in <" + name + "> at byte " + std::to_string(i);
      const std::string key = attrs.substr(a, eq - a), value = attrs.substr(eq + 2, q - eq - 2);
      if (key == "src" || key == "href" || key == "xlink:href") return "<" + name + "> fetches " + value;
      if (value.find("://") != std::string::npos && key != "xmlns") return "a URL in <" + name + ">: " + value;
      for (size_t k = value.find('&'); k != std::string::npos; k = value.find('&', k + 1)) {
        if (auto p = entity_problem(value, k); !p.empty()) return p + " (in an attribute of <" + name + ">)";
      }
      a = q + 1;
    }
    if (name == "script" || name == "iframe" || name == "link" || name == "img" || name == "object") {
      return "<" + name + "> in a self-contained report";
    }
    if (closing) {
      if (open.empty() || open.back() != name) {
        return "</" + name + "> closes <" + (open.empty() ? std::string("nothing") : open.back()) + "> at byte " +
               std::to_string(i);
      }
      open.pop_back();
    } else if (!self_closing && !is_void(name)) {
      open.push_back(name);
    }
    i = end + 1;
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  return "";
}

ChromiumRender render_in_chromium(const fs::path& page) {
  ChromiumRender r;
  std::string exe;
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (fs::exists(candidate)) {
      exe = candidate;
      break;
    }
  }
  if (exe.empty()) return r;
  r.found = true;
  TempDir scratch;
  const fs::path out = scratch / "dom.html", err = scratch / "err.txt";
  // As root Chromium needs --no-sandbox; its own profile keeps it off $HOME.
  const std::string cmd = "timeout 120 " + exe + " --headless --no-sandbox --disable-gpu --no-first-run " +
                          "--user-data-dir=" + (scratch / "profile").string() + " --dump-dom 'file://" +
                          fs::absolute(page).string() + "' > '" + out.string() + "' 2> '" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  r.dom = fs::exists(out) ? read_text(out) : "";
  r.err = fs::exists(err) ? read_text(err) : "";
  return r;
}

}  // namespace gcsim::test
