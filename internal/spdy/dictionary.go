package spdy

import (
	"encoding/binary"
	"hash/adler32"
)

// dictionaryWords and dictionaryTail make SPDY/3's header compression
// dictionary (draft 3, section 2.6.10.1), a protocol constant: the words,
// each after its length as 4 bytes big-endian, then the tail as it is.
var (
	dictionaryWords = []string{
		"options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
		"accept-encoding", "accept-language", "accept-ranges", "age", "allow", "authorization",
		"cache-control", "connection", "content-base", "content-encoding", "content-language",
		"content-length", "content-location", "content-md5", "content-range", "content-type",
		"date", "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since",
		"if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
		"max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
		"retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent",
		"vary", "via", "warning", "www-authenticate", "method", "get", "status", "200 OK",
		"version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin",
	}
	dictionaryTail = "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505" +
		"203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request" +
		"401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented" +
		"503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 " +
		"Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif," +
		"application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=" +
		"gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)

// dictionary is the header compression dictionary (1423 bytes), and
// dictionaryID its Adler-32, which a zlib stream that uses it names. Both
// are set once, here, and never written: dictionary's capacity is its
// length, so that appending to it copies.
var (
	dictionary   = makeDictionary()
	dictionaryID = adler32.Checksum(dictionary)
)

func makeDictionary() []byte {
	var d []byte
	for _, w := range dictionaryWords {
		d = binary.BigEndian.AppendUint32(d, uint32(len(w)))
		d = append(d, w...)
	}
	d = append(d, dictionaryTail...)
	return d[:len(d):len(d)]
}
