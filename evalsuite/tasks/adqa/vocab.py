"""Word lists and value grids for the synthetic ad platform (AD-QA style); order matters for reproducibility.

Data only: the lists look alike in shape because they are all lists of names and values.
"""

from __future__ import annotations

# Not formatted: the word lists read better packed than one word per line.
# fmt: off
# Name parts are disjoint across entity kinds, so a sub-question naming an entity retrieves that entity,
# while names within a kind share words on purpose (hard distractors such as "Aurora Spring Sale" / "... Sale UK").
ADVERTISER_BRANDS = (
    "Northwind", "Bluepeak", "Larkspur", "Copperleaf", "Brightwater", "Stonebridge", "Fernhill", "Silverline",
    "Oakmont", "Redfern", "Glenrock", "Ashgrove", "Windmere", "Clearbrook", "Highmoor", "Pinecrest",
    "Rosewood", "Thornbury", "Whitcombe", "Marlowe", "Kestrel", "Ardenne", "Belmora", "Calloway",
    "Dunmore", "Evercrest", "Fairhaven", "Goldcrest", "Hartwell", "Ironvale", "Juniper", "Kingsley",
    "Lockhart", "Meridian", "Newbury", "Orwell", "Pembrook", "Quillon", "Ravensworth", "Sableton",
    "Tamsin", "Umbra", "Valemont", "Westbury", "Yarrow", "Zephyrine", "Albright", "Bramwell",
    "Carrow", "Delacourt", "Elmstead", "Foxley", "Grantham", "Holloway", "Islington", "Jessamy",
    "Kilbride", "Lindqvist", "Montague", "Norcross",
)
ADVERTISER_SUFFIXES = (
    "Holdings", "Labs", "Brands", "Partners", "Collective", "Group", "Goods", "Studio", "Works", "Direct",
)

INDUSTRIES = (
    "financial services", "healthcare", "alcoholic beverages", "online gambling", "online dating", "pharmacy",
    "cryptocurrency", "higher education", "travel", "retail", "real estate", "consumer software",
)
# One policy per industry: (policy name, required certification).
POLICIES = (
    ("Restricted Financial Products Policy", "Financial Licence Verification"),
    ("Health Claims Policy", "Health Provider Verification"),
    ("Alcohol Content Policy", "Alcohol Seller Registration"),
    ("Gambling and Games Policy", "Gaming Operator Licence Check"),
    ("Dating Services Policy", "Dating Service Attestation"),
    ("Prescription Drugs Policy", "Online Pharmacy Accreditation"),
    ("Crypto Assets Policy", "Crypto Exchange Registration"),
    ("Education Claims Policy", "Accredited Institution Review"),
    ("Travel Pricing Transparency Policy", "Travel Agent Registration"),
    ("Consumer Goods Standard Policy", "Merchant Identity Check"),
    ("Housing and Real Estate Policy", "Broker Licence Verification"),
    ("Software Subscription Policy", "Subscription Terms Review"),
)

COUNTRIES = (
    "United States", "Canada", "Mexico", "Brazil", "Argentina", "United Kingdom", "Ireland", "France", "Germany",
    "Spain", "Italy", "Netherlands", "Sweden", "Poland", "Turkey", "India", "Japan", "South Korea", "Singapore",
    "Australia", "New Zealand", "South Africa", "Nigeria", "Egypt",
)
COUNTRY_ALIASES = {
    "United States": ("USA", "US", "United States of America"),
    "United Kingdom": ("UK", "Great Britain"),
    "South Korea": ("Korea", "Republic of Korea"),
    "Netherlands": ("The Netherlands", "Holland"),
}
BILLING_METHODS = ("monthly invoicing", "credit card", "prepaid balance", "direct debit")
ACCOUNT_TIERS = ("self-serve", "managed", "agency-managed", "enterprise")

CAMPAIGN_THEMES = (
    "Aurora", "Summit", "Velvet", "Horizon", "Ember", "Cascade", "Solstice", "Lumen", "Nimbus", "Tidal",
    "Zenith", "Mosaic", "Prism", "Quartzline", "Radiant", "Sierra", "Tempo", "Vertex", "Willow", "Beacon",
    "Catalyst", "Drift", "Evergreen", "Fusion", "Galaxy", "Harvest", "Impulse", "Jubilee", "Kinetic", "Legacy",
    "Momentum", "Nova", "Odyssey", "Pioneer", "Quest", "Ripple", "Spark", "Trailblazer", "Uplift", "Voyage",
    "Wavelength", "Apex", "Blossom", "Crescent", "Daybreak", "Elevate", "Frontier", "Gleam", "Halo", "Ignite",
)
CAMPAIGN_OCCASIONS = (
    "Spring", "Summer", "Autumn", "Winter", "Holiday", "Weekend", "Midyear", "Yearend", "Anniversary", "Clearance",
    "Backtoschool", "Newyear", "Blackfriday", "Cybermonday", "Festival", "Launch", "Evergreen", "Flash", "Loyalty",
    "Spotlight",
)
CAMPAIGN_PURPOSES = (
    "Sale", "Promo", "Prospecting", "Retargeting", "Awareness", "Leads", "Signups", "Installs", "Traffic", "Push",
    "Drive", "Showcase", "Offer", "Reactivation", "Upsell",
)
CAMPAIGN_MARKETS = ("EU", "UK", "US", "LATAM", "APAC", "DACH", "Nordics", "ANZ", "MENA", "Iberia")
CAMPAIGN_OBJECTIVES = (
    "online sales", "lead generation", "app installs", "website traffic", "brand awareness", "store visits",
    "video views",
)
DELIVERY_METHODS = ("standard", "accelerated")
DAILY_BUDGETS = (
    50, 75, 100, 120, 150, 200, 250, 300, 400, 500, 600, 750, 900, 1000, 1250, 1500, 2000, 2500, 3000, 4000, 5000,
)
MONTHLY_LIMITS = (5000, 10000, 15000, 20000, 25000, 30000, 40000, 50000, 75000, 100000, 150000, 200000)

ADGROUP_COLORS = (
    "Amber", "Cobalt", "Crimson", "Saffron", "Teal", "Indigo", "Scarlet", "Olive", "Coral", "Slate",
    "Ivory", "Jade", "Mauve", "Ochre", "Russet", "Sable", "Topaz", "Umber", "Violet", "Azure",
    "Bronze", "Cerise", "Fawn", "Garnet", "Hazel", "Lilac", "Maroon", "Pewter", "Sepia", "Tawny",
)
ADGROUP_ANIMALS = (
    "Heron", "Falcon", "Otter", "Lynx", "Badger", "Marten", "Osprey", "Puffin", "Bison", "Condor",
    "Dingo", "Egret", "Gecko", "Ibex", "Jackal", "Koala", "Lemur", "Manatee", "Narwhal", "Ocelot",
    "Pelican", "Quokka", "Raven", "Stoat", "Tapir", "Vole", "Walrus", "Yak", "Zebu", "Wombat",
    "Caracal", "Gannet", "Kinkajou", "Mongoose", "Plover", "Serval", "Tern", "Weasel", "Avocet", "Bittern",
)
ADGROUP_KEYWORDS = (
    "Generic", "Brand", "Competitor", "Exact", "Broad", "Phrase", "Dynamic", "Core", "Longtail", "Highvalue",
    "Premium", "Budget", "Topfunnel", "Midfunnel", "Evening", "Morning", "Local", "National", "Bundle", "Trial",
)
AD_FORMATS = ("responsive display", "single image", "carousel", "short video", "text", "shopping listing", "story")
DEVICE_TARGETS = ("all devices", "mobile only", "desktop only", "mobile and tablet")
MAX_CPC_CENTS = (35, 45, 50, 60, 75, 80, 90, 100, 120, 125, 150, 175, 200, 225, 250, 300, 350, 400, 450, 500)

STRATEGY_WORDS_A = (
    "Granite", "Silver", "Maple", "Cedar", "Bellwether", "Lantern", "Anchor", "Compass", "Harborlight", "Keystone",
    "Lighthouse", "Meadow", "Northstar", "Orchard", "Pinnacle", "Quarry", "Riverbend", "Sentinel", "Tideline",
    "Watchtower", "Bluestone", "Driftwood", "Foxglove", "Ironwood", "Marigold",
)
STRATEGY_WORDS_B = (
    "Ridge", "Harbor", "Crest", "Hollow", "Point", "Reach", "Basin", "Bluff", "Cove", "Dale",
    "Fjord", "Glade", "Heath", "Inlet", "Knoll", "Ledge", "Mesa", "Notch", "Pass", "Shoal",
)
STRATEGY_TYPES = (
    "Target CPA", "Target ROAS", "Maximize Conversions", "Maximize Conversion Value", "Manual CPC", "Enhanced CPC",
)
STRATEGY_TYPE_ALIASES = {
    "Target CPA": ("tCPA", "target cost per acquisition", "target cost per action"),
    "Target ROAS": ("tROAS", "target return on ad spend"),
    "Maximize Conversions": ("Maximise Conversions", "max conversions"),
    "Maximize Conversion Value": ("Maximise Conversion Value", "max conversion value"),
    "Manual CPC": ("manual cost per click", "manual bidding"),
    "Enhanced CPC": ("eCPC", "enhanced cost per click"),
}
TARGET_CPA_DOLLARS = (8, 10, 12, 15, 18, 20, 22, 25, 30, 35, 40, 45, 50, 60, 75, 90, 120)
TARGET_ROAS_PERCENT = (150, 200, 250, 300, 350, 400, 450, 500, 600, 800)
MAX_BID_CENTS = (100, 150, 200, 250, 300, 350, 400, 500, 600, 750, 800, 1000, 1200, 1500)
LEARNING_DAYS = (3, 5, 7, 10, 14, 21)

AUDIENCE_DESCRIPTORS = (
    "Lapsed", "Loyal", "Curious", "Frequent", "Homebound", "Urban", "Suburban", "Thrifty", "Devoted", "Wandering",
    "Budding", "Seasoned", "Eager", "Occasional", "Mindful", "Busy", "Savvy", "Casual", "Dedicated", "Aspiring",
    "Returning", "Firsttime", "Nightowl", "Earlybird", "Adventurous", "Highspending", "Dormant", "Engaged", "Hesitant",
    "Impulsive", "Cautious", "Trendy", "Practical", "Ambitious", "Nostalgic", "Playful", "Studious", "Sporty", "Crafty",
    "Gregarious",
)
AUDIENCE_PERSONAS = (
    "Cyclists", "Home Bakers", "Gardeners", "Gamers", "Runners", "Commuters", "Parents", "Students", "Travellers",
    "Foodies", "Anglers", "Campers", "Knitters", "Golfers", "Skiers", "Surfers", "Climbers", "Collectors", "Readers",
    "Painters", "Yogis", "Birdwatchers", "Photographers", "Sailors", "Homeowners", "Renters", "Freelancers", "Retirees",
    "Newlyweds", "Petowners", "Hobbyists", "Beekeepers", "Potters", "Drummers", "Chess Players", "Stargazers",
    "Kayakers", "Winemakers", "Tinkerers", "Volunteers",
)
AUDIENCE_GROUPS = (
    "Pool", "Cohort", "Segment", "Circle", "Club", "Crowd", "Network", "Tribe", "Panel", "Guild", "League", "Syndicate",
)
AUDIENCE_TYPES = ("website remarketing", "lookalike", "customer list", "custom intent", "in-market")
AUDIENCE_TYPE_ALIASES = {
    "website remarketing": ("remarketing", "retargeting"),
    "lookalike": ("look-alike", "similar audience"),
    "customer list": ("customer match", "CRM list"),
    "custom intent": ("custom-intent",),
    "in-market": ("in market",),
}
MEMBERSHIP_DAYS = (7, 14, 30, 45, 60, 90, 120, 180, 270, 365, 540)
AUDIENCE_SIZES = (
    12000, 18000, 25000, 32000, 45000, 60000, 80000, 120000, 150000, 210000, 300000, 450000, 600000, 900000, 1200000,
)
AGE_RANGES = ("18-24", "25-34", "35-44", "45-54", "55-64", "18-34", "25-54", "35-64")
INTERESTS = (
    "outdoor sports", "home cooking", "personal finance", "video games", "fitness", "travel deals", "fashion",
    "home improvement", "pets", "parenting", "consumer electronics", "gardening", "cars", "beauty", "books",
    "music festivals", "photography", "cycling", "crafts", "movies", "real estate listings", "healthy eating",
    "coffee", "wine", "camping", "running", "skiing", "board games", "interior design", "sustainable living",
    "online courses", "small business", "investing", "luxury goods", "sneakers", "hiking", "yoga", "tennis",
    "streaming", "smart home",
)

EVENT_MINERALS = (
    "Quartz", "Basalt", "Garnetite", "Feldspar", "Obsidian", "Jasper", "Onyx", "Pyrite", "Beryl", "Calcite", "Dolomite",
    "Fluorite", "Gypsum", "Hematite", "Kyanite", "Malachite", "Olivine", "Rhodonite", "Selenite", "Tourmaline",
    "Zircon", "Agate", "Azurite", "Citrine", "Galena", "Jadeite", "Magnetite", "Opal", "Peridot", "Spinel", "Talc",
    "Turquoise", "Andesite", "Bauxite", "Cinnabar", "Diorite", "Epidote", "Gneiss", "Mica", "Schist",
)
EVENT_STARS = (
    "Lyra", "Vega", "Orion", "Rigel", "Sirius", "Altair", "Deneb", "Polaris", "Antares", "Capella",
    "Canopus", "Pollux", "Castor", "Mira", "Spica", "Regulus", "Bellatrix", "Electra", "Maia", "Alcor",
    "Mizar", "Thuban", "Fomalhaut", "Achernar", "Hadar", "Shaula", "Sabik", "Nunki", "Izar", "Merak",
)
EVENT_CATEGORIES = (
    "purchase", "lead", "sign-up", "add to cart", "begin checkout", "subscription", "app install", "phone call",
)
CLICK_WINDOWS = (1, 7, 14, 28, 30, 45, 60, 90)
VIEW_WINDOWS = (0, 1, 3, 7, 14)
ATTRIBUTION_MODELS = ("last click", "first click", "linear", "time decay", "position-based", "data-driven")
COUNTING_METHODS = ("every conversion", "one conversion per click")
EVENT_VALUES = (0, 1, 2, 5, 10, 15, 20, 25, 40, 50, 75, 100, 150, 250)

PIXEL_TREES = (
    "Cedar", "Birch", "Alder", "Aspen", "Beech", "Cypress", "Elm", "Fir", "Hawthorn", "Hemlock",
    "Hickory", "Holly", "Larch", "Linden", "Magnolia", "Mahogany", "Myrtle", "Poplar", "Redwood", "Rowan",
    "Sequoia", "Spruce", "Sycamore", "Tamarack", "Walnut", "Yew", "Acacia", "Baobab", "Banyan", "Catalpa",
    "Ginkgo", "Hornbeam", "Tupelo", "Laurel", "Olivewood",
)
PIXEL_PLACES = (
    "Hollowbrook", "Fieldgate", "Millpond", "Stonewall", "Brookside", "Hillcrest", "Lakeshore", "Moorgate", "Parkside",
    "Riverside", "Eastgate", "Westfield", "Northfield", "Southmere", "Woodlawn", "Greenway", "Oakridge", "Elmwood",
    "Fairview", "Glenwood",
)
FIRING_METHODS = ("JavaScript tag", "server-side Conversions API", "image pixel", "tag manager container")
FIRING_ALIASES = {
    "JavaScript tag": ("JS tag", "JavaScript snippet"),
    "server-side Conversions API": ("Conversions API", "server-side API", "CAPI"),
    "image pixel": ("image tag", "1x1 image pixel"),
    "tag manager container": ("tag manager", "TMS container"),
}
SITE_WORDS = (
    "shop", "store", "checkout", "app", "portal", "book", "join", "apply", "my", "get", "go", "try",
)
SITE_STEMS = (
    "ambertrail", "brightlane", "cloudmarket", "dawnstreet", "everpath", "flintworks", "greenquay", "hollowmart",
    "inkwell", "jetstream", "kiteharbor", "lumaport", "mintgrove", "nextdoorway", "opalbay", "plumline",
    "quickfern", "rosequay", "sunnyacre", "tallpines", "urbanleaf", "vividcart", "wildmeadow", "yellowgate",
)
SITE_TLDS = ("com", "net", "io", "shop", "co")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
# fmt: on
