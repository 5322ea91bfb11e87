-- Numbers the book's headings: chapters 1, 2, ... and their sections 4.1,
-- 4.1.1; appendices A, B, ... ("Appendix A: Fewer multiplications", its
-- sections A.1); a heading marked {.unnumbered} and everything under it
-- (the preface, the instructors' guide) without a number.
--
-- pandoc's --number-sections cannot letter appendices, and it numbers the
-- sections of an unnumbered chapter after the chapter before it, so the book
-- does it here. A chapter is an appendix when its title starts "Appendix:".
-- The number goes in a span of class header-section-number, as pandoc's own
-- numbering does, so tools/book.css styles both alike.

local chapter, appendix = 0, 0
local prefix = nil   -- "4" or "A" under a numbered chapter, nil under none
local counts = {}    -- counts[k]: sections of level k under the current one

local function is_appendix(header)
  local first = header.content[1]
  return first and first.t == "Str" and first.text == "Appendix:"
end

local function number_span(text)
  return pandoc.Span({pandoc.Str(text)}, {class = "header-section-number"})
end

local function number(header)
  local unnumbered = header.classes:includes("unnumbered")
  if header.level == 1 then
    counts = {}
    if unnumbered then
      prefix = nil
    elseif is_appendix(header) then
      appendix = appendix + 1
      prefix = string.char(string.byte("A") + appendix - 1)
      -- "Appendix:" becomes "Appendix A:"
      header.content[1] = pandoc.Str("Appendix")
      header.content:insert(2, pandoc.Space())
      header.content:insert(3, pandoc.Str(prefix .. ":"))
      return header
    else
      chapter = chapter + 1
      prefix = tostring(chapter)
      header.content:insert(1, number_span(prefix))
      header.content:insert(2, pandoc.Space())
      return header
    end
    return nil
  end
  if not prefix or unnumbered then
    return nil
  end
  counts[header.level] = (counts[header.level] or 0) + 1
  for k = header.level + 1, 6 do
    counts[k] = nil
  end
  local parts = {prefix}
  for k = 2, header.level do
    parts[#parts + 1] = tostring(counts[k] or 0)
  end
  header.content:insert(1, number_span(table.concat(parts, ".")))
  header.content:insert(2, pandoc.Space())
  return header
end

-- In document order, over the whole book (the chapters come as one input).
function Pandoc(doc)
  doc.blocks = doc.blocks:walk({Header = number})
  return doc
end
