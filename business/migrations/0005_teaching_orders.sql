-- 0005_teaching_orders: teaching orders are marked as such.
--
-- teaching is 1 for an order the teaching file (testdata/orders.csv,
-- embedded in the binary) put into a new data dir, 0 for one a shop's
-- export imported. An import of an order id that is a teaching order no
-- task, draft or batch row uses replaces it (docs/orders.md "Teaching
-- orders"); `assistant --teaching-orders=false` makes a data dir without
-- them.
ALTER TABLE orders ADD COLUMN teaching INTEGER NOT NULL DEFAULT 0 CHECK (teaching IN (0, 1));

-- A file made before this schema holds the teaching orders its build
-- seeded, which were these twelve; an import could not change an order
-- then, so a row with the seeded id, owner and item is the seeded one.
UPDATE orders SET teaching = 1 WHERE (order_id, user, item) IN (VALUES
    ('A3001', 'demo-user', 'Trail running shoes (size 42)'),
    ('A3002', 'demo-user', 'Wool scarf — charcoal'),
    ('A3003', 'demo-user', '运动鞋 42码'),
    ('A3004', 'demo-user', 'Noise-cancelling headphones'),
    ('A3005', 'demo-user', 'Rain jacket (M)'),
    ('A3006', 'demo-user', 'Espresso machine'),
    ('A3007', 'demo-user', 'Clearance T-shirt (final sale)'),
    ('A3008', 'demo-user', 'Café au lait mug set'),
    ('A3009', 'demo-user', 'Bluetooth speaker'),
    ('A3010', 'demo-user', 'Desk lamp'),
    ('B4001', 'other-user', 'Leather wallet'),
    ('B4002', 'other-user', 'Yoga mat'));
