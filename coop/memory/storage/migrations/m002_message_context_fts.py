"""Migration 002, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

M002_MESSAGE_CONTEXT_FTS = Migration("m002_message_context_fts", why="""\
The full-text index the message leg of search reads (see `fulltext.py`): each message's own words and, in a
second column `context`, the words of the two messages before it in its session (each cut at 300 characters)
and the day it was written. Contentless with contentless_delete; `message_context_vocab` gives each term's
document count. Deleting or editing a message indexes the two after it again.""", sql="""
CREATE VIRTUAL TABLE message_context_fts USING fts5(content, context, content='', contentless_delete=1,
  tokenize = "porter unicode61 remove_diacritics 2");
-- How many messages hold each term: search drops a query's most common terms when matching them all would
-- cost too much (search.POSTINGS_BUDGET).
CREATE VIRTUAL TABLE message_context_vocab USING fts5vocab(message_context_fts, 'row');
INSERT INTO message_context_fts (rowid, content, context) SELECT m.id, coop_fts(m.content), coop_fts(coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1 OFFSET 1), '') ||
  ' ' ||
  coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1 OFFSET 0), '') ||
  ' ' ||
  coalesce(CASE strftime('%w', m.created_at, 'unixepoch', 'localtime') WHEN '0' THEN 'Sunday' WHEN '1' THEN 'Monday' WHEN '2' THEN 'Tuesday' WHEN '3' THEN 'Wednesday' WHEN '4' THEN 'Thursday' WHEN '5' THEN 'Friday' WHEN '6' THEN 'Saturday' ELSE '' END ||
  ' ' || CAST(strftime('%d', m.created_at, 'unixepoch', 'localtime') AS INTEGER) || ' ' ||
  CASE strftime('%m', m.created_at, 'unixepoch', 'localtime') WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March' WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June' WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September' WHEN '10' THEN 'October' WHEN '11' THEN 'November' WHEN '12' THEN 'December' ELSE '' END ||
  ' ' || strftime('%Y', m.created_at, 'unixepoch', 'localtime'), '')) FROM messages m;
CREATE TRIGGER messages_context_fts_ai AFTER INSERT ON messages BEGIN
  INSERT INTO message_context_fts (rowid, content, context)
    VALUES (new.id, coop_fts(new.content), coop_fts(coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = new.user_id AND p.session_id = new.session_id AND p.id < new.id ORDER BY p.id DESC LIMIT 1 OFFSET 1), '') ||
      ' ' ||
      coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = new.user_id AND p.session_id = new.session_id AND p.id < new.id ORDER BY p.id DESC LIMIT 1 OFFSET 0), '') ||
      ' ' ||
      coalesce(CASE strftime('%w', new.created_at, 'unixepoch', 'localtime') WHEN '0' THEN 'Sunday' WHEN '1' THEN 'Monday' WHEN '2' THEN 'Tuesday' WHEN '3' THEN 'Wednesday' WHEN '4' THEN 'Thursday' WHEN '5' THEN 'Friday' WHEN '6' THEN 'Saturday' ELSE '' END ||
      ' ' || CAST(strftime('%d', new.created_at, 'unixepoch', 'localtime') AS INTEGER) || ' ' ||
      CASE strftime('%m', new.created_at, 'unixepoch', 'localtime') WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March' WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June' WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September' WHEN '10' THEN 'October' WHEN '11' THEN 'November' WHEN '12' THEN 'December' ELSE '' END ||
      ' ' || strftime('%Y', new.created_at, 'unixepoch', 'localtime'), '')));
END;
CREATE TRIGGER messages_context_fts_ad AFTER DELETE ON messages BEGIN
  DELETE FROM message_context_fts WHERE rowid = old.id;
  DELETE FROM message_context_fts WHERE rowid IN (SELECT id FROM messages WHERE user_id = old.user_id AND session_id = old.session_id AND id > old.id ORDER BY id LIMIT 2);
  INSERT INTO message_context_fts (rowid, content, context)
    SELECT m.id, coop_fts(m.content), coop_fts(coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1 OFFSET 1), '') ||
      ' ' ||
      coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1 OFFSET 0), '') ||
      ' ' ||
      coalesce(CASE strftime('%w', m.created_at, 'unixepoch', 'localtime') WHEN '0' THEN 'Sunday' WHEN '1' THEN 'Monday' WHEN '2' THEN 'Tuesday' WHEN '3' THEN 'Wednesday' WHEN '4' THEN 'Thursday' WHEN '5' THEN 'Friday' WHEN '6' THEN 'Saturday' ELSE '' END ||
      ' ' || CAST(strftime('%d', m.created_at, 'unixepoch', 'localtime') AS INTEGER) || ' ' ||
      CASE strftime('%m', m.created_at, 'unixepoch', 'localtime') WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March' WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June' WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September' WHEN '10' THEN 'October' WHEN '11' THEN 'November' WHEN '12' THEN 'December' ELSE '' END ||
      ' ' ||
      strftime('%Y', m.created_at, 'unixepoch', 'localtime'), '')) FROM messages m WHERE m.id IN (SELECT id FROM messages WHERE user_id = old.user_id AND session_id = old.session_id AND id > old.id ORDER BY id LIMIT 2);
END;
CREATE TRIGGER messages_context_fts_au AFTER UPDATE OF content ON messages BEGIN
  DELETE FROM message_context_fts WHERE rowid = old.id;
  INSERT INTO message_context_fts (rowid, content, context)
    VALUES (new.id, coop_fts(new.content), coop_fts(coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = new.user_id AND p.session_id = new.session_id AND p.id < new.id ORDER BY p.id DESC LIMIT 1 OFFSET 1), '') ||
      ' ' ||
      coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = new.user_id AND p.session_id = new.session_id AND p.id < new.id ORDER BY p.id DESC LIMIT 1 OFFSET 0), '') ||
      ' ' ||
      coalesce(CASE strftime('%w', new.created_at, 'unixepoch', 'localtime') WHEN '0' THEN 'Sunday' WHEN '1' THEN 'Monday' WHEN '2' THEN 'Tuesday' WHEN '3' THEN 'Wednesday' WHEN '4' THEN 'Thursday' WHEN '5' THEN 'Friday' WHEN '6' THEN 'Saturday' ELSE '' END ||
      ' ' || CAST(strftime('%d', new.created_at, 'unixepoch', 'localtime') AS INTEGER) || ' ' ||
      CASE strftime('%m', new.created_at, 'unixepoch', 'localtime') WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March' WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June' WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September' WHEN '10' THEN 'October' WHEN '11' THEN 'November' WHEN '12' THEN 'December' ELSE '' END ||
      ' ' || strftime('%Y', new.created_at, 'unixepoch', 'localtime'), '')));
  DELETE FROM message_context_fts WHERE rowid IN (SELECT id FROM messages WHERE user_id = new.user_id AND session_id = new.session_id AND id > new.id ORDER BY id LIMIT 2);
  INSERT INTO message_context_fts (rowid, content, context)
    SELECT m.id, coop_fts(m.content), coop_fts(coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1 OFFSET 1), '') ||
      ' ' ||
      coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1 OFFSET 0), '') ||
      ' ' ||
      coalesce(CASE strftime('%w', m.created_at, 'unixepoch', 'localtime') WHEN '0' THEN 'Sunday' WHEN '1' THEN 'Monday' WHEN '2' THEN 'Tuesday' WHEN '3' THEN 'Wednesday' WHEN '4' THEN 'Thursday' WHEN '5' THEN 'Friday' WHEN '6' THEN 'Saturday' ELSE '' END ||
      ' ' || CAST(strftime('%d', m.created_at, 'unixepoch', 'localtime') AS INTEGER) || ' ' ||
      CASE strftime('%m', m.created_at, 'unixepoch', 'localtime') WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March' WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June' WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September' WHEN '10' THEN 'October' WHEN '11' THEN 'November' WHEN '12' THEN 'December' ELSE '' END ||
      ' ' ||
      strftime('%Y', m.created_at, 'unixepoch', 'localtime'), '')) FROM messages m WHERE m.id IN (SELECT id FROM messages WHERE user_id = new.user_id AND session_id = new.session_id AND id > new.id ORDER BY id LIMIT 2);
END;

""")
