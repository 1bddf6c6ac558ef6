// Text from logs (hostnames, file names, NCCL lines) put into SVG and HTML.
#pragma once

#include <string>
#include <string_view>

namespace fabricscope::analyze {

// Escapes & < > " ' so that any text is safe as element content or an attribute value.
inline std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // Control bytes are not allowed in XML 1.0 at all.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace fabricscope::analyze
