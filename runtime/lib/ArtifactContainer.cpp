//===- ArtifactContainer.cpp - The payload inside an artifact .so ---------===//
//
// Checksums, the trailer, and appending or finding the payload in a `.so`
// (the container described in ArtifactFormat.h).
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/ArtifactFormat.h"

#include "ArtifactBytes.h"

#include <cstring>
#include <string>
#include <utility>

using namespace kiln::rt;

uint64_t kiln::rt::artifactChecksum(const char *data, size_t size,
                                    uint64_t hash) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

uint64_t kiln::rt::weightsChecksum(const char *data, size_t size,
                                   uint64_t hash) {
  size_t words = size / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t word;
    std::memcpy(&word, data + 8 * i, 8);
    hash ^= word;
    hash *= 0x100000001b3ull;
  }
  for (size_t i = words * 8; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string kiln::rt::encodeArtifactTrailer(const ArtifactTrailer &t) {
  detail::ByteWriter w;
  w.u64(t.payloadOffset);
  w.u64(t.payloadSize);
  w.u64(t.checksum);
  w.raw(t.magic, sizeof(t.magic));
  return std::move(w.out);
}

std::string kiln::rt::appendArtifactPayload(const std::string &templateSo,
                                            const std::string &payload) {
  std::string out = templateSo;
  size_t pad = (kArtifactPayloadAlign - out.size() % kArtifactPayloadAlign) %
               kArtifactPayloadAlign;
  out.append(pad, '\0');
  ArtifactTrailer t;
  t.payloadOffset = out.size();
  t.payloadSize = payload.size();
  t.checksum = artifactChecksum(payload.data(), payload.size());
  std::memcpy(t.magic, kArtifactTrailerMagic, sizeof(t.magic));
  out.append(payload);
  out.append(encodeArtifactTrailer(t));
  return out;
}

bool kiln::rt::findArtifactPayload(const char *file, size_t fileSize,
                                   const char *&payload, size_t &payloadSize,
                                   std::string &error) {
  if (fileSize < kArtifactTrailerSize) {
    error = "corrupt artifact: file too small for a Kiln trailer";
    return false;
  }
  const char *tail = file + fileSize - kArtifactTrailerSize;
  detail::ByteReader r(tail, kArtifactTrailerSize);
  ArtifactTrailer t;
  r.u64(t.payloadOffset, "payload offset");
  r.u64(t.payloadSize, "payload size");
  r.u64(t.checksum, "checksum");
  std::memcpy(t.magic, tail + 24, sizeof(t.magic));
  if (std::memcmp(t.magic, kArtifactTrailerMagic, sizeof(t.magic)) != 0) {
    error = "corrupt artifact: no Kiln trailer at the end of the file (a bare "
            "template, a stripped file, or not a Kiln artifact)";
    return false;
  }
  uint64_t end = 0;
  if (!detail::checkedAdd(t.payloadOffset, t.payloadSize, end) ||
      end != fileSize - kArtifactTrailerSize) {
    error = "corrupt artifact: trailer payload range [" +
            std::to_string(t.payloadOffset) + ", +" +
            std::to_string(t.payloadSize) + ") does not end at the trailer";
    return false;
  }
  payload = file + t.payloadOffset;
  payloadSize = static_cast<size_t>(t.payloadSize);
  uint64_t actual = artifactChecksum(payload, payloadSize);
  if (actual != t.checksum) {
    error = "corrupt artifact: payload checksum mismatch (file damaged or "
            "truncated)";
    return false;
  }
  return true;
}
