package dev.tailor.lucene;

import java.io.IOException;

/**
 * An FM interval table that could not be read: the file was missing, was not JSON, or a field
 * broke the rules of shared/spec/formats.md ({@code fm-table.json}). The message names the source
 * and, where one is to blame, the field ({@code rows[2].intervals_ms}).
 */
public final class FmTableException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String source;
  private final String field;

  FmTableException(String source, String field, String why) {
    super(source + (field == null ? "" : ": " + field) + ": " + why);
    this.source = source;
    this.field = field;
  }

  FmTableException(String source, String why, Throwable cause) {
    super(source + ": " + why, cause);
    this.source = source;
    this.field = null;
  }

  /** The file (or other source) the table came from. */
  public String source() {
    return source;
  }

  /** The JSON field at fault, such as {@code rows[1].load}, or null if no single field is. */
  public String field() {
    return field;
  }
}
